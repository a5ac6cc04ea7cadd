"""Imports a PyTorch module into IR files for zero-opt and zero-run.

    python3 -m zero.import_torch pkg.mod:make_model --example-shape 2x128 \\
        -o step.mlir --init weights.safetensors
    zero-run step.mlir -n 4 --stage 3 --init weights.safetensors

MODEL is `module.path:name`, where `name` is an nn.Module or a function
returning one (called with no arguments). The example input is one tensor
of --example-shape (per-rank batch first) and --example-dtype, zeros: its
values do not matter, its shape fixes the step's. The loss is the causal-LM
loss (docs/torch.md); the step's inputs are the module's argument and
`labels`. docs/torch.md has every flag.
"""

import argparse
import importlib
import sys

import zero


def _model(spec):
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise SystemExit(f"import_torch: MODEL must be module.path:name, got "
                         f"'{spec}'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise SystemExit(f"import_torch: cannot import '{module_name}': "
                         f"{error}") from None
    try:
        value = getattr(module, attribute)
    except AttributeError:
        raise SystemExit(f"import_torch: '{module_name}' has no "
                         f"'{attribute}'") from None
    import torch
    if not isinstance(value, torch.nn.Module):
        value = value()
    if not isinstance(value, torch.nn.Module):
        raise SystemExit(f"import_torch: {spec} gave a "
                         f"{type(value).__name__}, not a torch.nn.Module")
    return value


def _shape(text):
    try:
        shape = [int(extent) for extent in text.lower().split("x")]
    except ValueError:
        shape = []
    if not shape or any(extent <= 0 for extent in shape):
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a shape like 2x128 (positive extents)")
    return shape


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python3 -m zero.import_torch",
        description="Import a PyTorch module (torch.export) as a training "
        "step for zero-opt / zero-run.")
    parser.add_argument("model", help="module.path:name of an nn.Module or "
                        "of a function returning one")
    parser.add_argument("--example-shape", type=_shape, required=True,
                        help="shape of the example input, per-rank batch "
                        "first, e.g. 2x128")
    parser.add_argument("--example-dtype", default="i64",
                        choices=["i64", "i32", "f32", "bf16", "f16"],
                        help="its dtype (default i64: token ids)")
    parser.add_argument("-o", "--output", required=True,
                        help="the IR file to write")
    parser.add_argument("--form", default="step",
                        choices=["forward", "step"],
                        help="step (default: after train-autodiff, what "
                        "zero-run --stage N and zero-opt --zero-pipeline "
                        "take) or forward (before it)")
    parser.add_argument("--init", default=None,
                        help="where to write the module's weights "
                        "(.safetensors, for zero-run --init)")
    parser.add_argument("--precision", default=None,
                        choices=["f32", "bf16", "f16"],
                        help="compute precision (default: the module's)")
    args = parser.parse_args(argv)

    import torch
    dtypes = {"i64": torch.int64, "i32": torch.int32, "f32": torch.float32,
              "bf16": torch.bfloat16, "f16": torch.float16}
    example = torch.zeros(args.example_shape, dtype=dtypes[args.example_dtype])
    try:
        graph = zero.from_torch(_model(args.model), (example,),
                                precision=args.precision,
                                init_path=args.init)
        compiled = graph.compile(1)
        compiled.save(args.output, args.form)
    except (ValueError, RuntimeError) as error:
        print(f"import_torch: {error}", file=sys.stderr)
        return 1
    print(f"import_torch: wrote {args.output} ({args.form}; inputs "
          f"{', '.join(graph.input_names)})"
          + (f" and {args.init}" if args.init else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
