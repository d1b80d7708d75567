#!/usr/bin/env python3
"""GPT-2's forward in NumPy, reading a Tessera safetensors export (or any GPT-2 safetensors file with
Hugging Face names) and the config.json beside it; prints the logits of a token sequence.

    scripts/gpt2_reference.py model.safetensors --tokens 72,101,108,108,111
    scripts/gpt2_reference.py model.safetensors --compare tessera_logits.json [--tolerance 1e-4]

--compare reads the JSON that `tessera_eval MODEL --tokens ... --print-logits` prints, runs the
same tokens and prints the largest absolute difference of the logits; it exits 1 when that is
above --tolerance. The reference computes in float64 from the file's values, with the parts of the
file parsed here (8-byte little-endian header length, JSON header, raw little-endian tensors), so it
checks Tessera's writer as much as its forward. Needs only python3 and numpy.
"""
import argparse
import json
import math
import os
import struct
import sys

import numpy as np


def read_safetensors(path):
    """{name: float64 array} from a safetensors file (F32, BF16 or F16)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    body = memoryview(data)[8 + n :]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = body[begin:end]
        if entry["dtype"] == "F32":
            values = np.frombuffer(raw, dtype="<f4")
        elif entry["dtype"] == "BF16":
            values = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        elif entry["dtype"] == "F16":
            values = np.frombuffer(raw, dtype="<f2")
        else:
            sys.exit(f"{path}: {name} has dtype {entry['dtype']}; this reference reads F32, BF16 and F16")
        tensors[name] = values.astype(np.float64).reshape(entry["shape"])
    return tensors


def layer_norm(x, weight, bias, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * weight + bias


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def gpt2_logits(w, config, tokens):
    """(T, vocab) logits of one sequence; Conv1D weights are (in, out): y = x @ W + b."""
    eps = config.get("layer_norm_epsilon", 1e-5)
    heads, channels = config["n_head"], config["n_embd"]
    hs = channels // heads
    t = len(tokens)
    x = w["transformer.wte.weight"][tokens] + w["transformer.wpe.weight"][:t]
    mask = np.triu(np.ones((t, t), dtype=bool), k=1)
    for layer in range(config["n_layer"]):
        p = f"transformer.h.{layer}."
        h = layer_norm(x, w[p + "ln_1.weight"], w[p + "ln_1.bias"], eps)
        qkv = h @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]  # (T, 3C): [q | k | v]
        q, k, v = (qkv[:, i * channels : (i + 1) * channels].reshape(t, heads, hs).transpose(1, 0, 2) for i in range(3))
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(hs)  # (NH, T, T)
        scores[:, mask] = -np.inf
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        y = (probs @ v).transpose(1, 0, 2).reshape(t, channels)
        x = x + y @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        h = layer_norm(x, w[p + "ln_2.weight"], w[p + "ln_2.bias"], eps)
        m = gelu_new(h @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        x = x + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    x = layer_norm(x, w["transformer.ln_f.weight"], w["transformer.ln_f.bias"], eps)
    return x @ w["transformer.wte.weight"].T  # the head is tied to the token embedding


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a .safetensors file with config.json beside it")
    parser.add_argument("--tokens", help="comma-separated token ids")
    parser.add_argument("--compare", help="tessera_eval --print-logits output (JSON) to compare with")
    parser.add_argument("--tolerance", type=float, default=1e-4, help="--compare: largest accepted |difference|")
    args = parser.parse_args()
    with open(os.path.join(os.path.dirname(os.path.abspath(args.model)), "config.json")) as f:
        config = json.load(f)
    weights = read_safetensors(args.model)
    theirs = None
    if args.compare:
        with open(args.compare) as f:
            theirs = json.load(f)
        tokens = theirs["tokens"]
    elif args.tokens:
        tokens = [int(t) for t in args.tokens.split(",")]
    else:
        parser.error("give --tokens or --compare")
    logits = gpt2_logits(weights, config, tokens)
    if theirs is None:
        json.dump({"tokens": tokens, "logits": logits.tolist()}, sys.stdout)
        print()
        return 0
    other = np.array(theirs["logits"], dtype=np.float64)
    if other.shape != logits.shape:
        print(f"shape mismatch: reference {logits.shape}, compared {other.shape}")
        return 1
    diff = np.abs(other - logits)
    worst = np.unravel_index(np.argmax(diff), diff.shape)
    print(f"max abs diff {diff.max():.3e} over {diff.size} logits (position {worst[0]}, token {worst[1]}: "
          f"reference {logits[worst]:.7f}, compared {other[worst]:.7f}); largest |logit| {np.abs(logits).max():.3f}")
    return 0 if diff.max() <= args.tolerance else 1


if __name__ == "__main__":
    sys.exit(main())
