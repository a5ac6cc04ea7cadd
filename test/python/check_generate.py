"""Trainer.generate (test/python/generate.test): sampling from the trained
model, as nanoGPT's `generate`.

  check_generate.py reference DIR   on 1 rank: trains GPT-2 tiny a few
        steps, then checks generate against a float64 numpy GPT-2 built
        from state_dict() and nanoGPT's sampling written out here (greedy,
        and temperature with top-k from the same numpy generator); saves
        the state and the tokens in DIR
  check_generate.py ranks DIR       on N ranks at stage 3: the state of DIR
        loaded, the same tokens as on 1 rank
  check_generate.py refused         every mistake refused by name

Prints one `ok:` (or `refused:`) line per check; the first failure raises.
"""

import os
import sys

import numpy as np

import zero

LAYERS, VOCAB, SEQ, DIM, HEADS, ROWS = 2, 256, 16, 32, 4, 4
INPUTS = {"positions": np.arange(SEQ), "targets": 0}
PROMPTS = [[5, 6, 7], [200, 3, 41]]


def say(line):
    if zero.rank() == 0:
        print(line, flush=True)


def gpt2(stage=0, ranks=1, with_logits=True):
    graph = zero.Graph("gpt2")
    local = ROWS // ranks
    tokens = graph.input("tokens", [local, SEQ], "i32")
    positions = graph.input("positions", [local, SEQ], "i32")
    targets = graph.input("targets", [local, SEQ], "i32")
    model = zero.nn.GPT2(graph, layers=LAYERS, vocab=VOCAB, seq=SEQ, dim=DIM,
                         heads=HEADS)
    if with_logits:
        graph.output("logits", model.logits(tokens, positions))
    graph.minimize(model.loss(tokens, positions, targets))
    graph.config.optimizer(zero.AdamW(lr=1e-2))
    graph.config.enable_zero(stage > 0, stage)
    return graph.compile(ranks)


def layer_norm(x, g, b):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + 1e-5) * g + b


def reference_logits(state, ids):
    """GPT-2's logits [seq, vocab] of one row of token ids, in float64,
    from the parameters alone (the builder's GPT-2: tanh GELU, tied head)."""
    s = {k: v.astype(np.float64) for k, v in state.items()}
    t = len(ids)
    x = s["wte"][ids] + s["wpe"][np.arange(t)]
    dh = DIM // HEADS
    mask = np.triu(np.ones((t, t), bool), 1)
    for layer in range(LAYERS):
        p = f"h{layer}."
        y = layer_norm(x, s[p + "ln_1.g"], s[p + "ln_1.b"])
        q, k, v = (
            (y @ s[p + f"attn.{n}.w"] + s[p + f"attn.{n}.b"])
            .reshape(t, HEADS, dh).transpose(1, 0, 2) for n in "qkv")
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(dh)
        scores[:, mask] = -np.inf
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        ctx = (scores @ v).transpose(1, 0, 2).reshape(t, DIM)
        x = x + ctx @ s[p + "attn.proj.w"] + s[p + "attn.proj.b"]
        y = layer_norm(x, s[p + "ln_2.g"], s[p + "ln_2.b"])
        h = y @ s[p + "mlp.fc.w"] + s[p + "mlp.fc.b"]
        h = 0.5 * h * (1 + np.tanh(np.sqrt(2 / np.pi) *
                                   (h + 0.044715 * h ** 3)))
        x = x + h @ s[p + "mlp.proj.w"] + s[p + "mlp.proj.b"]
    return layer_norm(x, s["ln_f.g"], s["ln_f.b"]) @ s["wte"].T


def reference_generate(state, prompt, new, temperature, top_k, rng):
    """nanoGPT's loop: crop to the context, the last position's logits /
    temperature, top-k, softmax, one draw (argmax at temperature 0)."""
    ids = list(prompt)
    for _ in range(new):
        logits = reference_logits(state, np.array(ids[-SEQ:]))[-1]
        if temperature == 0:
            ids.append(int(np.argmax(logits)))
            continue
        logits = logits / temperature
        if top_k is not None:
            kth = np.sort(logits)[-top_k]
            logits = np.where(logits < kth, -np.inf, logits)
        probs = np.exp(logits - logits.max())
        ids.append(int(rng.choice(VOCAB, p=probs / probs.sum())))
    return ids


def train(trainer, steps):
    """Text that counts 0, 1, ..., 7, 0, 1, ... from each row's start: a
    model trained on it continues a count, so greedy sampling has a
    sequence to follow, not one repeated token."""
    text = (np.arange(SEQ + 1)[None, :] + np.arange(ROWS)[:, None]) % 8
    for _ in range(steps):
        trainer.step([text[:, :-1].astype(np.int32),
                      np.tile(np.arange(SEQ, dtype=np.int32), (ROWS, 1)),
                      text[:, 1:].astype(np.int32)])


def reference(directory):
    trainer = zero.Trainer(gpt2(), seed=3)
    train(trainer, 30)
    state = trainer.state_dict()
    # Past the context (3 + 30 > 16): the window slides, as nanoGPT crops.
    greedy = trainer.generate(PROMPTS[0], 30, temperature=0, inputs=INPUTS)
    expected = reference_generate(state, PROMPTS[0], 30, 0, None, None)
    assert greedy.tolist() == expected, (greedy.tolist(), expected)
    say(f"ok: greedy, 30 tokens past a 3-token prompt (context {SEQ}): the "
        "float64 numpy GPT-2's")
    sampled = trainer.generate(PROMPTS, 20, temperature=0.8, top_k=10,
                               inputs=INPUTS, seed=11)
    rng = np.random.default_rng(11)
    # One draw per row per token, rows in order: the reference draws in
    # the same order from one generator.
    rows = [list(p) for p in PROMPTS]
    for _ in range(20):
        for row in rows:
            row.extend(reference_generate(state, row, 1, 0.8, 10, rng)[-1:])
    assert sampled.tolist() == rows, (sampled.tolist(), rows)
    say("ok: 2 prompts, temperature 0.8, top_k 10: nanoGPT's draws from "
        "the same generator")
    again = trainer.generate(PROMPTS, 20, temperature=0.8, top_k=10,
                             inputs=INPUTS, seed=11)
    other = trainer.generate(PROMPTS, 20, temperature=0.8, top_k=10,
                             inputs=INPUTS, seed=12)
    assert again.tolist() == sampled.tolist()
    assert other.tolist() != sampled.tolist()
    say("ok: the same seed draws the same tokens; another seed others")
    one = trainer.generate(PROMPTS[0], 20, top_k=1, inputs=INPUTS)
    assert one.tolist() == greedy[:23].tolist()
    say("ok: top_k=1 is greedy")
    steps = trainer.steps_done
    assert trainer.generate(PROMPTS[0], 0, inputs=INPUTS).tolist() == \
        PROMPTS[0]
    assert trainer.steps_done == steps and \
        trainer.state_dict()["wte"].tobytes() == state["wte"].tobytes()
    say("ok: generate trains nothing (no step, the state unchanged)")
    np.savez(os.path.join(directory, "state.npz"), **state)
    np.save(os.path.join(directory, "sampled.npy"), sampled)
    np.save(os.path.join(directory, "greedy.npy"), greedy)


def ranks(directory):
    ranks = zero.world_size()
    trainer = zero.Trainer(gpt2(stage=3, ranks=ranks), seed=3)
    with np.load(os.path.join(directory, "state.npz")) as state:
        trainer.load_state_dict(dict(state))
    greedy = trainer.generate(PROMPTS[0], 30, temperature=0, inputs=INPUTS)
    sampled = trainer.generate(PROMPTS, 20, temperature=0.8, top_k=10,
                               inputs=INPUTS, seed=11)
    assert greedy.tolist() == \
        np.load(os.path.join(directory, "greedy.npy")).tolist()
    assert sampled.tolist() == \
        np.load(os.path.join(directory, "sampled.npy")).tolist()
    say(f"ok: stage 3 on {ranks} ranks: the tokens of 1 rank, on every rank")


def refused():
    trainer = zero.Trainer(gpt2(), seed=3)

    def expect(what, call, text):
        try:
            call()
        except (ValueError, TypeError) as error:
            assert text in str(error), (what, str(error))
            say(f"refused: {what}: {error}")
            return
        raise AssertionError(f"{what}: not refused")

    expect("no logits output",
           lambda: zero.Trainer(gpt2(with_logits=False)).generate(
               [1], 1, inputs=INPUTS),
           "generate reads the graph output 'logits'")
    expect("an input left out",
           lambda: trainer.generate([1], 1, inputs={"targets": 0}),
           "missing ['positions']")
    expect("the tokens' own input given",
           lambda: trainer.generate([1], 1, inputs=dict(INPUTS, tokens=0)),
           "['tokens'] are not other inputs")
    expect("a value that does not broadcast",
           lambda: trainer.generate([1], 1, inputs=dict(
               INPUTS, positions=np.arange(5))),
           "does not broadcast to the input's global batch [4, 16]")
    expect("a float input as the tokens",
           lambda: zero.Trainer(mlp()).generate([1], 1, inputs={"labels": 0},
                                                logits="out"),
           "must be an integer [rows, seq] input, not f32[4, 8]")
    expect("an empty prompt", lambda: trainer.generate([], 1, inputs=INPUTS),
           "L >= 1")
    expect("float prompt ids",
           lambda: trainer.generate([1.5], 1, inputs=INPUTS), "integers")
    expect("more prompts than rows",
           lambda: trainer.generate([[1]] * 5, 1, inputs=INPUTS),
           "5 prompts: the evaluation batch holds 4 rows")
    expect("a negative count",
           lambda: trainer.generate([1], -1, inputs=INPUTS),
           "max_new_tokens is a count >= 0")
    expect("a negative temperature",
           lambda: trainer.generate([1], 1, -1.0, inputs=INPUTS),
           "temperature is a finite number >= 0")
    expect("top_k 0", lambda: trainer.generate([1], 1, top_k=0,
                                               inputs=INPUTS),
           "top_k is None or a count >= 1")
    expect("an id outside the vocabulary",
           lambda: trainer.generate([300], 1, inputs=INPUTS),
           "holds 300 at element 0; the program accepts ids in [0, 256)")
    expect("a model that looks ahead",
           lambda: zero.Trainer(bag_of_words()).generate(
               [1, 2], 1, inputs={"targets": 0}),
           "generate samples from a causal model")


def mlp():
    graph = zero.Graph("mlp")
    x = graph.input("x", [4, 8], "f32")
    labels = graph.input("labels", [4], "i32")
    out = zero.nn.Linear(graph, "fc", 8, 3)(x)
    graph.output("out", out)
    graph.minimize(zero.softmax_cross_entropy(out, labels))
    graph.config.optimizer(zero.SGD(lr=0.1))
    return graph.compile(1)


def bag_of_words():
    """Each position's logits from the mean of the whole row's embeddings:
    every position sees the tokens after it."""
    graph = zero.Graph("bag")
    tokens = graph.input("tokens", [4, SEQ], "i32")
    targets = graph.input("targets", [4, SEQ], "i32")
    table = zero.nn.Embedding(graph, "wte", VOCAB, DIM)
    mean = zero.reduce_mean(table(tokens), [1])
    spread = zero.reshape(zero.expand(mean, [4, SEQ, DIM], [1]),
                          [4 * SEQ, DIM])
    logits = zero.reshape(zero.nn.Linear(graph, "head", DIM, VOCAB)(spread),
                          [4, SEQ, VOCAB])
    graph.output("logits", logits)
    graph.minimize(zero.softmax_cross_entropy(logits, targets))
    graph.config.optimizer(zero.SGD(lr=0.1))
    return graph.compile(1)


def main():
    part = sys.argv[1]
    if part == "reference":
        reference(sys.argv[2])
    elif part == "ranks":
        ranks(sys.argv[2])
    else:
        refused()


if __name__ == "__main__":
    main()
