# SPDX-License-Identifier: GPL-3.0-or-later
"""kvscope.record_vllm without vLLM: what it refuses before it touches anything. Its recordings of a real vLLM are
held to vLLM's own KV cache manager by tests/peers/vllm_recording.py (ctest peers_vllm_recording)."""

import kvscope


def test_record_vllm_refuses_what_is_not_a_vllm_engine(tmp_path):
    recorder = kvscope.record_vllm(object(), tmp_path / "x.kvsess")
    try:
        with recorder:
            raise AssertionError("an object() was recorded as a vLLM engine")
    except TypeError as error:
        assert "expected a vllm.LLM, LLMEngine, EngineCore or Scheduler, got object" in str(error)
    assert not (tmp_path / "x.kvsess").exists()
