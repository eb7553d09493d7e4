"""Silero VAD v6 at 8 kHz on one of two CPU runtimes: OpenVINO (the default) or onnxruntime.

Both run the ``silero-vad`` wheel's export (``input``/``state (2,B,128)``/``sr``) and give the same
probabilities (within 2e-3 over whole streams: ``tests/edge/test_silero.py``). On the edge's
batches OpenVINO's CPU plugin costs a third of onnxruntime's CPU per chunk (10-13 against 31-33 us
at batch 32-128, this machine: docs/benchmarks.md, "Append hot path"), and Silero was the largest
part of what VAD cost per audio stream.

OpenVINO reads neither the export's ``If`` on ``sr`` nor its rank-less tensors, and it is fastest
on static shapes: so it runs the 8 kHz branch alone as a flat graph (``flat_8k_graph``), compiled
at load for each batch size of a ladder (1, 2, 4, ... 32, 48, 64, 96, ... 512; a batch runs as
sizes of it padded by at most an eighth: ``batch_plan``), ~1.4 s of CPU once per process.
"""

from __future__ import annotations

import threading
from typing import Protocol

import numpy as np
import onnx
import onnxruntime as ort
import openvino as ov
from onnx import TensorProto, helper, numpy_helper

from edge.shared.protocols import F32
from wire.errors import ModelMissing

__all__ = [
    "CONTEXT", "FRAME", "RUNTIMES", "OnnxRuntimeSilero", "OpenVinoSilero", "SileroModel", "flat_8k_graph",
    "load_silero",
]  # fmt: skip

MODEL_RATE = 8_000
CONTEXT = 32
"""Samples of the previous chunk Silero sees in front of each one at 8 kHz (64 at 16 kHz)."""
FRAME = CONTEXT + 256
"""Samples Silero takes per row at 8 kHz: the context and a 256-sample (32 ms) chunk."""
STATE = 128
RUNTIMES = ("openvino", "onnxruntime")


class SileroModel(Protocol):
    runtime: str

    def initial_state(self) -> F32:
        """(2, 128): Silero's recurrent state of one stream (h and c)."""
        ...

    def run(self, frames: F32, states: F32) -> tuple[F32, F32]:
        """``frames`` (B, 288: context + chunk at 8 kHz) and ``states`` (B, 2, 128) -> probabilities
        (B,) and new states (B, 2, 128), both arrays of their own."""
        ...


def _initial_state() -> F32:
    return np.zeros((2, STATE), dtype=np.float32)


def _unreadable(path: str, exc: Exception) -> ModelMissing:
    return ModelMissing(f"cannot load Silero VAD from {path}: {exc}; run `voicemesh models fetch`")


def _not_silero(path: str) -> ModelMissing:
    return ModelMissing(
        f"{path} is not the silero-vad wheel's Silero export (batched, with an 8 kHz mode): "
        "run `voicemesh models fetch` and use its silero_vad.onnx"
    )


class OnnxRuntimeSilero:
    runtime = "onnxruntime"

    def __init__(self, path: str) -> None:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        try:
            self._session = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise _unreadable(path, exc) from exc
        if {i.name for i in self._session.get_inputs()} != {"input", "state", "sr"}:
            raise _not_silero(path)  # (faster-whisper's copy has h/c and 16 kHz only)
        self._sr = np.array(MODEL_RATE, dtype=np.int64)

    def initial_state(self) -> F32:
        return _initial_state()

    def run(self, frames: F32, states: F32) -> tuple[F32, F32]:
        out, state_n = self._session.run(
            None,
            {"input": frames, "state": np.ascontiguousarray(states.transpose(1, 0, 2)), "sr": self._sr},
        )
        return np.asarray(out, np.float32).reshape(-1), np.asarray(state_n, np.float32).transpose(1, 0, 2)


def flat_8k_graph(path: str) -> bytes:
    """The export's 8 kHz branch as a model of its own (inputs ``input`` (B, 288) and ``state``
    (2, B, 128), outputs ``output`` and ``stateN``), its shapes inferred: what OpenVINO reads."""
    try:
        model = onnx.load(path)
    except Exception as exc:
        raise _unreadable(path, exc) from exc
    graph = model.graph
    ops = [n.op_type for n in graph.node]
    if ops != ["Constant", "Equal", "If", "Identity", "Identity"] or [i.name for i in graph.input] != [
        "input", "state", "sr"
    ]:  # fmt: skip
        raise _not_silero(path)
    if int(numpy_helper.to_array(graph.node[0].attribute[0].t)) != 16_000:  # `If sr == 16000`
        raise _not_silero(path)
    branch = next(a.g for a in graph.node[2].attribute if a.name == "else_branch")
    prob, state = (o.name for o in branch.output)
    flat = helper.make_graph(
        [
            *branch.node,
            helper.make_node("Identity", [prob], ["output"]),
            helper.make_node("Identity", [state], ["stateN"]),
        ],
        "silero_vad_8k",
        [
            helper.make_tensor_value_info("input", TensorProto.FLOAT, ["B", FRAME]),
            helper.make_tensor_value_info("state", TensorProto.FLOAT, [2, "B", STATE]),
        ],
        list(graph.output),
        initializer=[*graph.initializer, *branch.initializer],
    )
    out = helper.make_model(flat, opset_imports=model.opset_import)
    out.ir_version = model.ir_version
    return onnx.shape_inference.infer_shapes(out).SerializeToString()


def _ladder(limit: int = 512) -> tuple[int, ...]:
    """1, 2, 4, 8, 16, 32, 48, 64, 96, ... limit: sizes half a step apart from 32 on, where the
    rows are most of the cost (below it the call's own cost is)."""
    sizes, p = [1, 2, 4, 8, 16], 32
    while p <= limit:
        sizes += [p, p * 3 // 2]
        p *= 2
    return tuple(s for s in sizes if s <= limit)


LADDER = _ladder()


class OpenVinoSilero:
    runtime = "openvino"

    def __init__(self, path: str) -> None:
        self._core = ov.Core()
        graph = flat_8k_graph(path)  # (ModelMissing if it is not the wheel's export)
        try:
            self._model = self._core.read_model(graph)
        except Exception as exc:
            raise ModelMissing(
                f"OpenVINO cannot read Silero VAD from {path}: {exc}; "
                "run the edge with --vad-runtime onnxruntime"
            ) from exc
        # Every size compiled now (~0.1 s of CPU each, once): compiled at a batch's first call,
        # they cost that batch its wait and whoever measures the edge a second of CPU.
        self._requests = {size: self._compile(size) for size in LADDER}
        self._lock = threading.Lock()  # (one model serves the batcher's thread and benches)

    def initial_state(self) -> F32:
        return _initial_state()

    def _compile(self, size: int) -> ov.InferRequest:
        model = self._model.clone()
        model.reshape({"input": [size, FRAME], "state": [2, size, STATE]})
        # f32: on CPUs with bf16 (this one) OpenVINO would infer in bf16, a quarter cheaper
        # still, but its probabilities drift from onnxruntime's by up to 0.02 over a stream.
        config = {"INFERENCE_NUM_THREADS": 1, "NUM_STREAMS": 1, "ENABLE_CPU_PINNING": False,
                  "INFERENCE_PRECISION_HINT": "f32"}  # fmt: skip
        return self._core.compile_model(model, "CPU", config).create_infer_request()

    def run(self, frames: F32, states: F32) -> tuple[F32, F32]:
        probs = np.empty(len(frames), dtype=np.float32)
        new_states = np.empty_like(states)
        start = 0
        with self._lock:
            for size in batch_plan(len(frames)):
                end = min(start + size, len(frames))
                probs[start:end], new_states[start:end] = self._infer(
                    size, frames[start:end], states[start:end]
                )
                start = end
        return probs, new_states

    def _infer(self, size: int, frames: F32, states: F32) -> tuple[F32, F32]:
        n = len(frames)
        rows = np.zeros((size, FRAME), dtype=np.float32)
        rows[:n] = frames
        state = np.zeros((2, size, STATE), dtype=np.float32)
        state[:, :n] = states.transpose(1, 0, 2)
        out = self._requests[size].infer({"input": rows, "state": state})
        # (the request's output tensors are reused by its next call: copied out by the caller)
        return np.asarray(out[0]).reshape(-1)[:n], np.asarray(out[1])[:, :n].transpose(1, 0, 2)


def batch_plan(n: int) -> list[int]:
    """The ladder's sizes that run a batch of ``n`` rows, in order: padded up to the next size when
    that wastes at most an eighth, else the largest size that fits first, then the rest the same
    way. A batch of 300 padded to 384 spent 28 % of its time on padding; as 256 + 48, 1 %."""
    plan: list[int] = []
    while n > 0:
        up = next((s for s in LADDER if s >= n), None)
        if up is not None and (up - n <= n // 8 or up <= 16):
            return [*plan, up]
        down = max(s for s in LADDER if s <= n)
        plan.append(down)
        n -= down
    return plan


def load_silero(path: str, runtime: str = "openvino") -> SileroModel:
    if runtime == "openvino":
        return OpenVinoSilero(path)
    if runtime == "onnxruntime":
        return OnnxRuntimeSilero(path)
    raise ValueError(f"unknown VAD runtime {runtime!r}: one of {', '.join(RUNTIMES)}")
