"""A Llama written by hand with the builder (`import zero`), no PyTorch:
RMSNorm, rotary position embeddings, grouped-query attention, a SwiGLU MLP
and tied embeddings, from the `train` ops (docs/python.md, docs/torch.md).

    python3 -m zero.run -n 4 examples/llama/llama.py --stage 3 --steps 20

Parameters carry Hugging Face's names (`model.layers.0.self_attn.q_proj.weight`,
...), so a LlamaForCausalLM state_dict is an initial state for it as it is
(test/torch/llama-by-hand.test trains both side by side). The rotary cos/sin
tables are frozen parameters whose values come with the initial state:
`initial_state()` computes them.
"""

import argparse
import math
import os
import tempfile

import numpy as np

import zero


class Config:
    """LlamaConfig's fields that shape the model."""

    def __init__(self, vocab=256, dim=64, layers=2, heads=4, kv_heads=2,
                 hidden=128, seq=16, eps=1e-6, theta=10000.0):
        if dim % heads or heads % kv_heads:
            raise ValueError("dim must divide by heads, heads by kv_heads")
        self.vocab, self.dim, self.layers = vocab, dim, layers
        self.heads, self.kv_heads, self.hidden = heads, kv_heads, hidden
        self.seq, self.eps, self.theta = seq, eps, theta
        self.head_dim = dim // heads


def linear(graph, name, x, out_features, in_features):
    """nn.Linear without bias: x W^T, the weight [out, in] as in PyTorch."""
    weight = graph.parameter(name, [out_features, in_features],
                             zero.Init.normal(0.0, 0.02))
    rows = math.prod(x.shape[:-1])
    flat = zero.reshape(x, [rows, in_features])
    y = zero.matmul(flat, weight.value, transpose_b=True)
    return zero.reshape(y, list(x.shape[:-1]) + [out_features])


def rms_norm(graph, name, x, eps):
    """x / sqrt(mean(x^2) + eps) * weight, over the last dim."""
    dim, rows = x.shape[-1], list(x.shape[:-1])
    weight = graph.parameter(name, [dim], zero.Init.ones())
    mean_square = zero.reduce_mean(x * x, [len(rows)])
    inverse = zero.rsqrt(mean_square + graph.full(rows, eps))
    normed = x * zero.expand(inverse, x.shape, [len(rows)])
    return normed * zero.expand(weight.value, x.shape, list(range(len(rows))))


def rotate_half(x):
    half = x.shape[-1] // 2
    last = len(x.shape) - 1
    return zero.concat([zero.neg(zero.narrow(x, last, half, half)),
                        zero.narrow(x, last, 0, half)], last)


def attention(graph, prefix, x, cos, sin, cfg):
    batch, seq = x.shape[0], x.shape[1]
    d, h, kv = cfg.head_dim, cfg.heads, cfg.kv_heads

    def heads(name, count):
        y = linear(graph, f"{prefix}.{name}.weight", x, count * d, cfg.dim)
        y = zero.reshape(y, [batch, seq, count, d])
        return zero.transpose(y, [0, 2, 1, 3])  # [B, count, S, D]

    def rotary(t):
        shape = t.shape
        c = zero.expand(cos, shape, [0, 1])
        s = zero.expand(sin, shape, [0, 1])
        return t * c + rotate_half(t) * s

    def repeat_kv(t):
        # [B, kv, S, D] -> [B, kv, h / kv, S, D] -> [B, h, S, D]
        wide = zero.expand(t, [batch, kv, h // kv, seq, d], [2])
        return zero.reshape(wide, [batch, h, seq, d])

    q = rotary(heads("q_proj", h))
    k = repeat_kv(rotary(heads("k_proj", kv)))
    v = repeat_kv(heads("v_proj", kv))
    scores = zero.scale(zero.matmul(q, k, transpose_b=True), 1.0 / math.sqrt(d))
    probs = zero.softmax(zero.causal_mask(scores, float("-inf")))
    out = zero.transpose(zero.matmul(probs, v), [0, 2, 1, 3])
    out = zero.reshape(out, [batch, seq, h * d])
    return linear(graph, f"{prefix}.o_proj.weight", out, cfg.dim, h * d)


def mlp(graph, prefix, x, cfg):
    gate = linear(graph, f"{prefix}.gate_proj.weight", x, cfg.hidden, cfg.dim)
    up = linear(graph, f"{prefix}.up_proj.weight", x, cfg.hidden, cfg.dim)
    return linear(graph, f"{prefix}.down_proj.weight", zero.silu(gate) * up,
                  cfg.dim, cfg.hidden)


def build(cfg, batch, name="llama"):
    """The causal-LM training step for a per-rank batch of `batch`
    sequences: inputs `input_ids` and `labels` (the ids: the loss takes
    logits[:, :-1] against labels[:, 1:])."""
    graph = zero.Graph(name)
    ids = graph.input("input_ids", [batch, cfg.seq], "i64")
    labels = graph.input("labels", [batch, cfg.seq], "i64")
    table = graph.parameter("model.embed_tokens.weight", [cfg.vocab, cfg.dim],
                            zero.Init.normal(0.0, 0.02))
    tables = []
    for which in ("cos", "sin"):
        frozen = graph.parameter(f"rope.{which}", [cfg.seq, cfg.head_dim],
                                 zero.Init.zeros())
        frozen.requires_grad = False
        tables.append(frozen.value)
    x = zero.embedding(table.value, ids)
    for layer in range(cfg.layers):
        prefix = f"model.layers.{layer}"
        x = x + attention(graph, f"{prefix}.self_attn",
                          rms_norm(graph, f"{prefix}.input_layernorm.weight",
                                   x, cfg.eps), *tables, cfg)
        x = x + mlp(graph, f"{prefix}.mlp",
                    rms_norm(graph,
                             f"{prefix}.post_attention_layernorm.weight", x,
                             cfg.eps), cfg)
    x = rms_norm(graph, "model.norm.weight", x, cfg.eps)
    flat = zero.reshape(x, [batch * cfg.seq, cfg.dim])
    logits = zero.reshape(
        zero.matmul(flat, table.value, transpose_b=True),  # tied lm_head
        [batch, cfg.seq, cfg.vocab])
    graph.minimize(zero.softmax_cross_entropy(
        zero.narrow(logits, 1, 0, cfg.seq - 1),
        zero.narrow(labels, 1, 1, cfg.seq - 1)))
    return graph


def rope_tables(cfg):
    """Llama's default rotary tables, [seq, head_dim] each, in float32."""
    inv_freq = 1.0 / (cfg.theta ** (np.arange(0, cfg.head_dim, 2,
                                              dtype=np.float32)
                                    / cfg.head_dim))
    freqs = np.outer(np.arange(cfg.seq, dtype=np.float32), inv_freq)
    emb = np.concatenate([freqs, freqs], axis=-1).astype(np.float32)
    return {"rope.cos": np.cos(emb), "rope.sin": np.sin(emb)}


def initial_state(cfg, seed=0):
    """Every parameter of build(cfg): weights N(0, 0.02), norms 1, and the
    rotary tables."""
    rng = np.random.default_rng(seed)
    state = rope_tables(cfg)
    normal = lambda *shape: rng.normal(0.0, 0.02, shape).astype(np.float32)
    state["model.embed_tokens.weight"] = normal(cfg.vocab, cfg.dim)
    d, h, kv = cfg.head_dim, cfg.heads, cfg.kv_heads
    for layer in range(cfg.layers):
        p = f"model.layers.{layer}"
        for name, shape in [("self_attn.q_proj", (h * d, cfg.dim)),
                            ("self_attn.k_proj", (kv * d, cfg.dim)),
                            ("self_attn.v_proj", (kv * d, cfg.dim)),
                            ("self_attn.o_proj", (cfg.dim, h * d)),
                            ("mlp.gate_proj", (cfg.hidden, cfg.dim)),
                            ("mlp.up_proj", (cfg.hidden, cfg.dim)),
                            ("mlp.down_proj", (cfg.dim, cfg.hidden))]:
            state[f"{p}.{name}.weight"] = normal(*shape)
        for norm in ("input_layernorm", "post_attention_layernorm"):
            state[f"{p}.{norm}.weight"] = np.ones(cfg.dim, np.float32)
    state["model.norm.weight"] = np.ones(cfg.dim, np.float32)
    return state


def write_state(state, path):
    from safetensors.numpy import save_file
    save_file({name: np.ascontiguousarray(value)
               for name, value in state.items()}, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch", type=int, default=2,
                        help="sequences per rank")
    parser.add_argument("--lr", type=float, default=3e-3)
    args = parser.parse_args()
    cfg = Config()
    graph = build(cfg, args.batch)
    graph.config.optimizer(zero.AdamW(lr=args.lr)).enable_zero(
        args.stage > 0, args.stage)
    compiled = graph.compile(zero.world_size())
    # Each rank writes the same (seeded) state to its own file: no rank
    # waits for another's.
    init = os.path.join(tempfile.gettempdir(),
                        f"llama-init-{os.getpid()}.safetensors")
    write_state(initial_state(cfg), init)
    trainer = zero.Trainer(compiled, init=init,
                           input_names=["input_ids", "labels"])
    os.remove(init)
    rng = np.random.default_rng(1)
    rows = args.batch * zero.world_size()
    ids = rng.integers(0, cfg.vocab, (rows, cfg.seq))
    for step in range(1, args.steps + 1):
        loss = trainer.step([ids, ids])
        if zero.rank() == 0 and (step == 1 or step % 5 == 0):
            print(f"step {step}: loss {loss:.4f}", flush=True)


if __name__ == "__main__":
    main()
