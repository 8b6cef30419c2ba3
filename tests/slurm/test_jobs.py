"""The job kind registry and kind references that other processes resolve."""

from __future__ import annotations

import pytest

from slurm.errors import UnknownJobKindError
from slurm.jobs import get_job_kind, job_kind_ref, register_job_kind, resolve_ref


def test_lazy_pipeline_kind_is_registered_by_reference():
    assert job_kind_ref("pipeline") == "pipeline.job:run_pipeline"


def test_test_kinds_travel_by_file_path_and_resolve():
    ref = job_kind_ref("boom")
    assert ref.endswith("tests/slurm/kinds.py:boom")
    fn = resolve_ref(ref)
    with pytest.raises(RuntimeError, match="boom in"):
        fn(type("R", (), {"run_id": "x"})(), None, None)


def test_project_callables_travel_by_module_name():
    from slurm.job import save_checkpoint

    register_job_kind("tmp-kind", save_checkpoint)
    try:
        assert job_kind_ref("tmp-kind") == "slurm.job:save_checkpoint"
        assert get_job_kind("tmp-kind") is save_checkpoint
    finally:
        from slurm.jobs import JOB_KINDS
        JOB_KINDS.pop("tmp-kind")


def test_unknown_kind_lists_known_ones():
    with pytest.raises(UnknownJobKindError, match=r"unknown job kind 'x'; known: .*boom.*pipeline"):
        job_kind_ref("x")


def test_bad_reference_is_explained():
    with pytest.raises(UnknownJobKindError, match="'module:attr' or '/file.py:attr'"):
        resolve_ref("no-colon")
