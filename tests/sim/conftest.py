"""Shared fixtures of the tlbsim tests: the binary, built once."""

import pathlib

import pytest

from nova_tlbbalance.simulate import engine

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope='session')
def tlbsim():
    """Path of a tlbsim binary built from this tree (make -C tlbsim)."""
    return engine.binary(build=True)
