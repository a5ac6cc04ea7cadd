"""Plans from shapes alone: zero.from_torch on modules built on PyTorch's
meta device (test/torch/meta-plan.test).

  check_meta_plan.py [NAME ...]

Each architecture of the zoo (test/torch/zoo.py; all by default) is built
twice from its config, on the CPU and under `torch.device("meta")`, and
imported with the same example inputs (ids, the left-padded attention mask
and labels, as check_torch_import gives them). Both are compiled for ZeRO-3
on 8 ranks, predicted on h100-nvlink-8, and must give the same plan: the
report (memory, traffic, the predicted step) and the lowered program, text
for text but for the value of a one-number constant computed from a meta
buffer (Gemma's embedding scale), which is unknown. The meta one has no
weights: trainer() refuses. BERT's import reads a meta buffer's values
(its token types) and is refused, naming where. Then the other refusals:
an example input on the meta device, a module partly on it, and a mask the
importer must read that is a meta buffer.
"""

import json
import re
import sys

import torch

import check_torch_import
import zero
import zoo


FILL = re.compile(r"(zrt\.launch \"zrt\.fill\" .*\bvalue = )[^ }]+")


def plan(kind, device):
    make, _ = zoo.ZOO[kind.split(":", 1)[1]]
    with torch.device(device):
        torch.manual_seed(0)
        model = make()
    model.eval()
    graph = check_torch_import.import_model(kind, model)
    graph.config.optimizer(zero.AdamW(lr=1e-3)).enable_zero(True, 3)
    graph.config.zero.machine = "h100-nvlink-8"
    compiled = graph.compile(8)
    return graph, compiled


def expect_refusal(what, make, needle):
    try:
        make()
    except (zero.torch.UnsupportedModuleError, RuntimeError) as error:
        if needle not in str(error):
            raise AssertionError(f"{what}: refused, but not for {needle!r}: "
                                 f"{error}") from error
        print(f"ok: refused {what}: {needle}", flush=True)
        return
    raise AssertionError(f"{what}: not refused")


class MetaMask(torch.nn.Module):
    """Attention under a causal mask kept as a buffer: on the meta device
    the importer cannot tell that it is causal."""

    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)
        self.register_buffer("mask", torch.tril(torch.ones(4, 4)).bool())

    def forward(self, x):
        q = self.proj(x).unsqueeze(1)
        out = torch.nn.functional.scaled_dot_product_attention(
            q, q, q, attn_mask=self.mask)
        return out.squeeze(1)


# Architectures whose import reads a meta buffer's values, and where.
REFUSED = {
    # Its token types are a buffer of zeros, the ids of an embedding.
    "bert": "module 'bert.embeddings.token_type_embeddings'",
    # Its query/key/value split indexes by a list (fused_qkv[..., [-2], :]),
    # which torch.export makes a tensor on the module's device: on the meta
    # device the importer cannot read which positions it takes.
    "falcon": "module 'transformer.h.0.self_attention' (FalconAttention)",
    "falcon-new": "module 'transformer.h.0.self_attention' (FalconAttention)",
}


def main():
    names = sys.argv[1:] or list(zoo.ZOO)
    for name in names:
        kind = f"zoo:{name}"
        if name in REFUSED:
            expect_refusal(f"{name} on the meta device",
                           lambda: plan(kind, "meta"), REFUSED[name])
            continue
        cpu_graph, cpu = plan(kind, "cpu")
        meta_graph, meta = plan(kind, "meta")
        if meta_graph.init_path is not None:
            raise AssertionError(f"{name}: a meta module wrote weights")
        cpu_report = json.dumps(cpu.report, sort_keys=True)
        meta_report = json.dumps(meta.report, sort_keys=True)
        if cpu_report != meta_report:
            raise AssertionError(f"{name}: the meta module's report differs:"
                                 f"\n{cpu_report}\n{meta_report}")
        # The one difference allowed: the value of a one-number constant
        # computed from a meta buffer (Gemma's embedding scale), which is
        # unknown.
        cpu_program, meta_program = (
            FILL.sub(r"\1?", compiled.ir("program")) for compiled in (cpu, meta))
        if cpu_program != meta_program:
            raise AssertionError(f"{name}: the meta module's program differs")
        unknown = sum(a != b for a, b in zip(
            cpu.ir("program").splitlines(), meta.ir("program").splitlines()))
        if cpu_graph.parameter_paths != meta_graph.parameter_paths:
            raise AssertionError(f"{name}: the parameters differ (tied "
                                 "weights?)")
        expect_refusal(f"{name}: training the meta plan",
                       lambda: meta_graph.trainer(meta), "no weights")
        prediction = meta.report["prediction"]
        print(f"ok: {name}: the meta module plans as the CPU one: "
              f"{meta.report['model_state']} B of model state, "
              f"{prediction['tokens']} tokens a step, {unknown} "
              "constant(s) of unknown value", flush=True)

    # bf16: the rotary tables are cast as they are made, a fold of meta
    # tensors that names a device.
    plans = []
    for device in ("cpu", "meta"):
        with torch.device(device):
            model = zoo.ZOO["llama"][0]()
        graph = zero.from_torch(model, (torch.zeros(2, 16, dtype=torch.long),),
                                precision="bf16")
        graph.config.optimizer(zero.AdamW(lr=1e-3)).enable_zero(True, 3)
        plans.append(graph.compile(8).ir("program"))
    if plans[0] != plans[1]:
        raise AssertionError("bf16 llama: the meta module's program differs")
    print("ok: llama in bf16: the meta module plans as the CPU one",
          flush=True)

    # As a published run is planned: the module cast to bf16, attention
    # fused, torchtitan's selective checkpointing.
    plans = []
    for device in ("cpu", "meta"):
        with torch.device(device):
            model = zoo.ZOO["llama"][0]().to(torch.bfloat16)
        graph = zero.from_torch(model, (torch.zeros(2, 16, dtype=torch.long),),
                                attention="fused", checkpoint="selective_op")
        graph.config.optimizer(zero.AdamW(lr=1e-3)).enable_zero(True, 3)
        graph.config.zero.reduce_dtype = "f32"
        compiled = graph.compile(8)
        plans.append((compiled.ir("program"),
                      json.dumps(compiled.report, sort_keys=True)))
        if "train.attention" not in compiled.ir("forward"):
            raise AssertionError("fused llama: no train.attention")
    if plans[0] != plans[1]:
        raise AssertionError("bf16 llama, fused, selective_op: the meta "
                             "module's plan differs")
    print("ok: llama cast to bf16, attention fused, selective_op "
          "checkpointing: the meta module plans as the CPU one", flush=True)

    ids = torch.zeros(2, 4, dtype=torch.long)
    expect_refusal(
        "an example input on the meta device",
        lambda: zero.from_torch(zoo.ZOO["llama"][0](),
                                (ids.to("meta"),)),
        "example input 0 is on the meta device")
    partly = zoo.ZOO["llama"][0]()
    partly.lm_head.to("meta")
    expect_refusal("a module partly on the meta device",
                   lambda: zero.from_torch(partly, (ids,)),
                   "is on the meta device but")
    with torch.device("meta"):
        masked = MetaMask()
    expect_refusal(
        "a mask the importer reads, as a meta buffer",
        lambda: zero.from_torch(masked, (torch.randn(2, 4, 8),),
                                loss=lambda out: out.mean()),
        "reads the values of a tensor computed from buffers on the meta "
        "device")
    return 0


if __name__ == "__main__":
    sys.exit(main())
