// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cfs.h"
#include "tap.h"

int file_write_buf(const char *path, const void *buf, size_t len)
{
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -errno;
	n = write(fd, buf, len);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != len)
		err = -EIO;
	if (close(fd) && !err)
		err = -errno;
	return err;
}

static int file_vprintf(const char *path, const char *fmt, va_list ap)
{
	char buf[8192];
	int len;

	len = vsnprintf(buf, sizeof(buf), fmt, ap);
	if (len < 0 || (size_t)len >= sizeof(buf))
		return -E2BIG;
	return file_write_buf(path, buf, len);
}

int file_printf(const char *path, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = file_vprintf(path, fmt, ap);
	va_end(ap);
	return ret;
}

long file_read(const char *path, char *buf, size_t size)
{
	size_t off = 0;
	ssize_t n;
	int fd;

	if (!size)
		return -EINVAL;
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -errno;
	while (off + 1 < size) {
		n = read(fd, buf + off, size - 1 - off);
		if (n < 0) {
			n = -errno;
			close(fd);
			return n;
		}
		if (!n)
			break;
		off += n;
	}
	buf[off] = '\0';
	close(fd);
	return off;
}

int file_read_u64(const char *path, uint64_t *val)
{
	char buf[64], *end;
	long n;

	n = file_read(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	errno = 0;
	*val = strtoull(buf, &end, 0);
	if (errno || end == buf || (*end && *end != '\n'))
		return -EINVAL;
	return 0;
}

const char *tlbb_path(const char *vm, const char *attr)
{
	static char path[512];

	snprintf(path, sizeof(path), TLBB_CFS_ROOT "/vms/%s%s%s", vm,
		 attr ? "/" : "", attr ? attr : "");
	return path;
}

int tlbb_vm_create(const char *vm)
{
	return mkdir(tlbb_path(vm, NULL), 0755) ? -errno : 0;
}

int tlbb_vm_remove(const char *vm)
{
	return rmdir(tlbb_path(vm, NULL)) ? -errno : 0;
}

int tlbb_set(const char *vm, const char *attr, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = file_vprintf(tlbb_path(vm, attr), fmt, ap);
	va_end(ap);
	return ret;
}

long tlbb_get(const char *vm, const char *attr, char *buf, size_t size)
{
	long n = file_read(tlbb_path(vm, attr), buf, size);

	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	return n;
}

uint64_t tlbb_get_u64(const char *vm, const char *attr)
{
	uint64_t v;
	int err = file_read_u64(tlbb_path(vm, attr), &v);

	if (err)
		tap_bail("read %s of vm %s: %s", attr, vm, strerror(-err));
	return v;
}

int tlbb_status(const char *vm, const char *key, char *buf, size_t size)
{
	char st[16384], *line, *save;
	size_t klen = strlen(key);
	long n;

	n = file_read(tlbb_path(vm, "status"), st, sizeof(st));
	if (n < 0)
		return n;
	for (line = strtok_r(st, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, key, klen) && line[klen] == ' ') {
			snprintf(buf, size, "%s", line + klen + 1);
			return 0;
		}
	}
	return -ENOENT;
}

int tlbb_inject(const char *vm, uint64_t huge_per_s, uint64_t small_per_s)
{
	return file_printf(TLBB_INJECT, "%s %" PRIu64 " %" PRIu64 "\n", vm,
			   huge_per_s, small_per_s);
}

int tlbb_inject_off(const char *vm)
{
	return file_printf(TLBB_INJECT, "%s off\n", vm);
}

int tlbb_set_fast(const char *vm, unsigned long step)
{
	int err = tlbb_set(vm, "interval_ms", "20\n");

	err = err ?: tlbb_set(vm, "sustain_ms", "0\n");
	err = err ?: tlbb_set(vm, "samples", "1\n");
	err = err ?: tlbb_set(vm, "floor_pages", "0\n");
	return err ?: tlbb_set(vm, "step_pages", "%lu\n", step);
}
