"""Meshes from Python (graph.config.mesh), test/python/mesh.test.

On 4 ranks, an MLP compiled for a 2x2 mesh (2 nodes of 2 ranks) at ZeRO
stage 3 trains as the same graph on one axis of 4 ranks: losses within 1e-6,
parameters within 1e-5 (the averages are summed in another association).
Hybrid sharding holds the shards of a node of 2; full 2-D sharding
(zero.mesh_scheme = "full") those of all 4 ranks, and hpZ
(zero.hpz) trains as full does, bitwise. Each rank prints one line
per scheme; then the mistakes, each refused at compile.
"""

import math

import numpy as np

import zero


def build(mesh, scheme="hybrid", hpz=False, stage=3, quantize=False):
    graph = zero.Graph("mlp")
    x = graph.input("x", [4, 16], "f32")
    labels = graph.input("labels", [4], "i32")
    fc1 = zero.nn.Linear(graph, "fc1", 16, 32)
    fc2 = zero.nn.Linear(graph, "fc2", 32, 5)
    graph.minimize(zero.softmax_cross_entropy(fc2(zero.relu(fc1(x))), labels))
    graph.config.optimizer(zero.AdamW(lr=1e-2))
    graph.config.enable_zero(True, stage=stage)
    if mesh:
        graph.config.mesh(*mesh)
    graph.config.zero.mesh_scheme = scheme
    graph.config.zero.hpz = hpz
    if quantize:
        graph.config.zero.qwz = True
        graph.config.zero.qgz = True
        graph.config.zero.quantize_block = 64
        graph.config.zero.quantize_min_elements = 64
    return graph


def three_bit_codes():
    graph = build((2, 2), "full", True, quantize=True)
    graph.config.zero.qgz_bits = 3
    return graph


def train(mesh, scheme="hybrid", hpz=False, quantize=False):
    compiled = build(mesh, scheme, hpz,
                     quantize=quantize).compile(zero.world_size())
    trainer = zero.Trainer(compiled, seed=3)
    rng = np.random.default_rng(0)
    losses = []
    for _ in range(4):
        x = rng.standard_normal((16, 16)).astype(np.float32)
        y = (np.arange(16) % 5).astype(np.int32)
        losses.append(trainer.step([x, y]))
    return compiled, losses, trainer.state_dict()


def main():
    flat, flat_losses, flat_state = train(None)
    mesh, mesh_losses, mesh_state = train((2, 2))
    assert build((2, 2)).config.mesh_shape == [2, 2]
    assert all(math.isclose(a, b, rel_tol=1e-6)
               for a, b in zip(flat_losses, mesh_losses)), (flat_losses,
                                                            mesh_losses)
    for name, value in flat_state.items():
        assert np.allclose(mesh_state[name], value, rtol=1e-5, atol=1e-5), name
    held = mesh.report["parameters"]
    flat_held = flat.report["parameters"]
    # Sharded over 2 ranks instead of 4 (the shards' padding aside).
    assert abs(held - 2 * flat_held) <= 64, (held, flat_held)
    print(f"rank {zero.rank()}: ok: a 2x2 mesh at stage 3 trains as one axis "
          f"of 4; each rank holds {held} parameter bytes, twice the "
          f"{flat_held} of one axis (sharded within a node of 2)")

    full, full_losses, full_state = train((2, 2), "full")
    assert all(math.isclose(a, b, rel_tol=1e-6)
               for a, b in zip(flat_losses, full_losses)), (flat_losses,
                                                            full_losses)
    for name, value in flat_state.items():
        assert np.allclose(full_state[name], value, rtol=1e-5, atol=1e-5), name
    # Cut over all 4 ranks: what one axis of 4 holds, exactly.
    assert full.report["parameters"] == flat_held, (full.report, flat_held)
    _, hpz_losses, hpz_state = train((2, 2), "full", hpz=True)
    assert hpz_losses == full_losses, (hpz_losses, full_losses)
    for name, value in full_state.items():
        assert np.array_equal(hpz_state[name], value), name
    print(f"rank {zero.rank()}: ok: full 2-D sharding holds {flat_held} "
          f"parameter bytes as one axis of 4 does, and hpz equals it bitwise")

    quantized, q_losses, _ = train((2, 2), "full", hpz=True, quantize=True)
    assert all(math.isclose(a, b, rel_tol=1e-3)
               for a, b in zip(q_losses, full_losses)), (q_losses, full_losses)
    plan = quantized.report["quantization"]
    assert plan["block"] == 64 and plan["weights"] and plan["gradients"], plan
    # ZeRO++'s defaults: int8 weights, int4 gradients.
    assert plan["weight_bits"] == 8 and plan["gradient_bits"] == 4, plan
    # The report's closed formula of the bytes across nodes (checked
    # against the planned and measured traffic in test/e2e/zeropp.test):
    # fewer than the same in full precision.
    assert 0 < plan["across_nodes_bytes"] < \
        plan["across_nodes_bytes_unquantized"], plan
    print(f"rank {zero.rank()}: ok: qwz (int8) and qgz (int4) train within "
          f"1e-3 of full precision; full precision across nodes: "
          f"{plan['full_precision']}")
    if zero.rank() == 0:
        for what, call in {
            "a mesh of other ranks": lambda: build((2, 2)).compile(3),
            "an empty axis": lambda: build((0, 4)).compile(4),
            "an unknown scheme": lambda: build((2, 2), "diagonal").compile(4),
            "hpz at stage 2": lambda: build((2, 2), "full", True,
                                            stage=2).compile(4),
            "a scheme without a mesh": lambda: build(None, "full").compile(4),
            "qgz with hybrid sharding": lambda: build(
                (2, 2), "hybrid", quantize=True).compile(4),
            "3-bit gradient codes": lambda: three_bit_codes().compile(4),
        }.items():
            try:
                call()
            except ValueError as error:
                print(f"refused {what}: ValueError: {error}")
            else:
                raise AssertionError(f"{what} was accepted")


if __name__ == "__main__":
    main()
