"""Shared fixtures of tests/synth/envs: a small validated build, made once per session (about 2 s)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def built():
    from synth.envs.build import build_envs_report

    samples, rejected = build_envs_report(6, seed=3)
    return samples, rejected
