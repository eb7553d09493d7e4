"""Convert a GGUF checkpoint to a Hugging Face bf16 checkpoint that vLLM can load.

Runs inside the vLLM runtime's own interpreter (it needs torch, transformers and gguf), so it
imports nothing from voicemesh. Usage: python convert_gguf.py GGUF_DIR GGUF_FILE OUT_DIR
"""

import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig


def main() -> None:
    src, name, out = sys.argv[1:4]
    print("step 1/3: reading tokenizer", flush=True)
    tok = AutoTokenizer.from_pretrained(src, gguf_file=name)
    print("step 2/3: dequantising weights to bf16", flush=True)
    model = AutoModelForCausalLM.from_pretrained(
        src,
        gguf_file=name,
        dtype=torch.bfloat16,
        quantization_config=GgufConfig(gguf_file=name, dequantize=True),
    )
    # The checkpoint we save is plain bf16: drop the GGUF quantisation markers or vLLM rejects it.
    for obj in (model, model.config):
        for attr in ("quantization_config", "hf_quantizer"):
            if hasattr(obj, attr):
                try:
                    delattr(obj, attr)
                except AttributeError:
                    setattr(obj, attr, None)
    model.is_quantized = False
    print("step 3/3: saving", flush=True)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    print(f"saved {out}", flush=True)


if __name__ == "__main__":
    main()
