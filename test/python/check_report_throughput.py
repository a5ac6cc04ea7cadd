"""The predicted step's throughput figures (tokens/s a GPU, model FLOPs,
MFU), held to a count by hand of a GPT-2's FLOPs (report-throughput.test).

For a GPT-2 of L blocks of width d over a vocabulary V (tied head), each
token costs 6 x (12 L d^2 + V d) matmul FLOPs: forward 2 per weight,
backward 4 (the input's and the weight's gradient). Attention adds, per
sequence and block, 12 x heads x head_dim x pairs: its two score-sized
matmuls forward, four backward, over seq^2 pairs for the separate ops and
seq (seq + 1) / 2 for the fused causal kernel, which computes only the
scores it keeps. Recomputing a forward op (activation checkpointing) and
the fused backward's recomputation of the scores are executed FLOPs, not
the model's: the report counts them apart.
"""

import math
import re
import sys

import zero

B, S, D, H, V, L = 4, 32, 64, 4, 128, 2
RANKS = 2
PEAK = 989e12  # h100-nvlink-8's peak_flops


def compile_gpt(fused=True, checkpoint="none", accumulate=1,
                machine="h100-nvlink-8"):
    graph = zero.Graph("gpt")
    inputs = [graph.input(name, [B, S], "i32")
              for name in ("tokens", "positions", "targets")]
    model = zero.nn.GPT2(graph, layers=L, vocab=V, seq=S, dim=D, heads=H,
                         fused_attention=fused, checkpoint=checkpoint)
    graph.minimize(model.loss(*inputs))
    graph.config.optimizer(zero.AdamW(lr=1e-3)).enable_zero(True, 3)
    graph.config.activation_checkpointing(checkpoint != "none")
    if accumulate > 1:
        graph.config.gradient_accumulation_steps(accumulate)
    graph.config.zero.machine = machine
    return graph.compile(RANKS)


def model_flops(fused, accumulate=1):
    tokens = B * S * accumulate
    pairs = S * (S + 1) / 2 if fused else S * S
    attention = 12 * H * (D // H) * pairs * L * B * accumulate
    return 6 * (12 * L * D * D + V * D) * tokens + attention


def recomputed_flops(fused):
    """What full checkpointing recomputes of one micro-batch: each block's
    forward but its last matmul (4 d^2 a token), whose result feeds only
    the block's output, which is kept; the backward needs nothing it
    computes. So 8 d^2 a token (the qkv, output and up projections) and
    the attention's forward."""
    pairs = S * (S + 1) / 2 if fused else S * S
    return 2 * 8 * L * D * D * B * S + 4 * H * (D // H) * pairs * L * B


def close(a, b):
    return math.isclose(a, b, rel_tol=1e-9)


def check(name, got, want):
    if not close(got, want):
        raise AssertionError(f"{name}: the report says {got}, by hand {want}")


def text_figures(compiled):
    text = compiled.report_text()
    tokens = re.search(r"^  tokens / s +([0-9.]+) a device +\(([0-9]+) a step: "
                       r"the elements of input @(\w+)\)", text, re.M)
    mfu = re.search(r"^  MFU +([0-9.]+) % +\(of the ([0-9.]+) TFLOP/s", text,
                    re.M)
    return tokens, mfu


def main():
    # The report's count of each case against the one by hand.
    for fused in (True, False):
        for checkpoint in ("none", "full"):
            for accumulate in (1, 2):
                compiled = compile_gpt(fused, checkpoint, accumulate)
                p = compiled.report["prediction"]
                what = (f"fused={fused} checkpoint={checkpoint} "
                        f"accumulate={accumulate}")
                if p["tokens"] != B * S * accumulate:
                    raise AssertionError(f"{what}: {p['tokens']} tokens, "
                                         f"the run has {B * S * accumulate}")
                check(f"{what}: model FLOPs", p["model_flops"],
                      model_flops(fused, accumulate))
                # The fused backward recomputes the scores: one of its five
                # score-sized matmuls, 2 of the 12 x heads x ... above.
                kernel = (2 * H * (D // H) * S * (S + 1) / 2 * L * B
                          * accumulate if fused else 0)
                recompute = kernel + (recomputed_flops(fused) * accumulate
                                      if checkpoint == "full" else 0)
                check(f"{what}: recomputed FLOPs", p["recompute_flops"],
                      recompute)
                step = p["step_seconds"]
                check(f"{what}: tokens/s", p["tokens_per_second"],
                      p["tokens"] / step)
                check(f"{what}: MFU", p["mfu"], p["model_flops"] / step / PEAK)
                tokens, mfu = text_figures(compiled)
                if not tokens or int(tokens.group(2)) != p["tokens"] or \
                        tokens.group(3) != "input0" or \
                        abs(float(tokens.group(1)) - p["tokens_per_second"]) \
                        > 0.05:
                    raise AssertionError(f"{what}: the text's tokens line "
                                         f"differs from the dict: {tokens}")
                if not mfu or float(mfu.group(2)) != 989.0 or \
                        abs(float(mfu.group(1)) - 100 * p["mfu"]) > 0.005:
                    raise AssertionError(f"{what}: the text's MFU line "
                                         f"differs from the dict: {mfu}")
                print(f"ok: {what}: {p['tokens']} tokens, "
                      f"{p['model_flops']:.0f} model FLOPs, "
                      f"{p['recompute_flops']:.0f} recomputed, as by hand")

    # A machine without a datasheet peak (the CPU's) states no MFU.
    compiled = compile_gpt(machine="cpu")
    p = compiled.report["prediction"]
    if p["mfu"] is not None or text_figures(compiled)[1]:
        raise AssertionError("the cpu preset has no peak_flops, yet the "
                             "report states an MFU")
    check("cpu: model FLOPs", p["model_flops"], model_flops(True))
    print("ok: cpu: no MFU without a datasheet peak; the same model FLOPs")

    # Without a machine there is no prediction.
    graph_compiled = compile_gpt(machine="")
    if "prediction" in graph_compiled.report:
        raise AssertionError("a graph compiled for no machine has a "
                             "prediction")
    print("ok: no machine, no prediction")
    return 0


if __name__ == "__main__":
    sys.exit(main())
