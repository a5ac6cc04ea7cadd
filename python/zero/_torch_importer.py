"""The walk of an exported program: constant subgraphs folded with torch,
every other node turned into builder ops by its handler (_torch_ops)."""

import operator

import torch

from zero import _torch_masks, _zero
from zero._torch_ops import (DROPPED, HANDLERS, HINTS, HONOURS, IDENTITY,
                             RESHAPES, UNARY, UNMAPPED)
from zero._torch_schema import check_arguments, normalized
from zero._torch_values import (DTYPES, UnsupportedModuleError, Live,
                                Transposed, dtype_name, meta_shape, where)

aten = torch.ops.aten


def decomposition_table():
    table = torch.export.default_decompositions()
    # Kept whole: it becomes matmul, scale, causal_mask, softmax, matmul,
    # and its decomposition breaks Hugging Face's GPT-2 (a view of the
    # non-contiguous result).
    table.pop(aten.scaled_dot_product_attention.default, None)
    # Kept whole: train.softmax_cross_entropy, where its decomposition is
    # log_softmax, gather and the ignore_index masking.
    table.pop(aten.cross_entropy_loss.default, None)
    # train.silu, rather than x * sigmoid(x) in two kernels.
    table.pop(aten.silu.default, None)
    # Kept whole: train.dropout, where its decomposition draws with
    # rand_like.
    table.pop(aten.native_dropout.default, None)
    return table


class Importer:

    def __init__(self, program, graph, wrapper, compute_dtype,
                 plan_only=False, fused_attention=False, checkpoint=None):
        self.program = program
        # (mode, module paths): the blocks whose ops are recomputed in the
        # backward (from_torch's checkpoint), or None.
        self.checkpoint = checkpoint
        # scaled_dot_product_attention becomes train.attention.
        self.fused_attention = fused_attention
        # The module's parameters and buffers are on the meta device.
        self.plan_only = plan_only
        self.graph = graph
        self.wrapper = wrapper
        # What a declared f32 tensor becomes: the configured precision.
        self.compute_dtype = compute_dtype
        self.values = {}  # fx node -> Live, torch.Tensor, list, or scalar
        self.parameters = {}  # storage key -> (our name, Live)
        self.parameter_paths = {}
        # Our parameter name -> the wrapper's paths of its tensor, and the
        # wrapper's paths of the buffers the step read: what trainer()
        # reads again or checks (zero._torch_state).
        self.parameter_sources = {}
        self.buffer_sources = []
        # The values to start from, by our name (none for a tensor on the
        # meta device).
        self.init_tensors = {}
        self.constants = {}
        # The frozen parameters made of constant tensors, in order.
        self.constant_names = []
        # Folds of meta tensors by op and operands (fold()).
        self.meta_folds = {}
        self.const_count = 0
        # Rows of the per-rank batch: the first input's first dimension,
        # along which train.dropout draws its mask.
        self.batch_rows = None

    # -- Values ------------------------------------------------------------

    def arg(self, value):
        if isinstance(value, torch.fx.Node):
            if value not in self.values:
                raise UnsupportedModuleError(
                    f"{value.target} is used before it is defined")
            return self.values[value]
        if isinstance(value, (list, tuple)):
            return [self.arg(v) for v in value]
        return value

    def is_constant(self, value):
        if isinstance(value, (Live, Transposed, _torch_masks.KeyMask,
                              _torch_masks.AdditiveMask)):
            return False
        if isinstance(value, list):
            return all(self.is_constant(v) for v in value)
        return True

    def full(self, shape, value, dtype):
        """A constant tensor of one value, of `dtype` as given (the type of
        the tensor it goes with: an f32 value a 16-bit model widened stays
        f32)."""
        return Live(self.graph.full(shape, value, dtype, exact_type=True),
                    shape, dtype)

    def splat(self, shape, value, dtype):
        """A constant tensor of one value: an f32 one computes in the
        configured precision, as constant parameters do."""
        return self.full(shape, value,
                         self.compute_dtype if dtype == "f32" else dtype)

    def live(self, value, node, like=None):
        """`value` as a Live: constants become splat `full`s, or frozen
        parameters holding their values."""
        if isinstance(value, Live):
            return value
        if isinstance(value, Transposed):
            source = value.source
            return Live(_zero.transpose(source.tensor, [1, 0]), value.shape,
                        source.dtype)
        if isinstance(value, (int, float, bool)):
            if like is None:
                raise UnsupportedModuleError(
                    f"{node.target}: a scalar operand with no tensor beside "
                    f"it {where(node)}")
            return self.full(like.shape, float(value), like.dtype)
        if not isinstance(value, torch.Tensor):
            raise UnsupportedModuleError(
                f"{node.target}: operand {value!r} is neither a tensor nor "
                f"a number {where(node)}")
        dtype = dtype_name(value.dtype, f"a constant of {node.target}")
        shape = list(value.shape)
        if value.is_meta:
            # Computed from the meta device's buffers (rotary tables from
            # inv_freq, Gemma's embedding scale): its shape is all there is.
            if dtype in ("i32", "i64"):
                raise UnsupportedModuleError(
                    f"{node.target}: an integer constant computed from "
                    f"buffers on the meta device {where(node)}; the importer "
                    "needs its values (position ids, indices): build the "
                    "module's buffers on the CPU")
            if value.numel() == 1:
                # One number is one number throughout: a splat, as with
                # values. Its value is unknown and nothing planned depends
                # on it; 3 is no identity a fold could take.
                return self.splat(shape, 3.0, dtype)
            # A plan holds it as a frozen parameter, as an import with
            # values does a constant that is not one number throughout.
            return self.constant_parameter(value, node)
        flat = value.reshape(-1)
        if flat.numel() > 0 and bool((flat == flat[0]).all()):
            if dtype in ("i32", "i64"):
                raise UnsupportedModuleError(
                    f"{node.target}: an integer constant operand "
                    f"{where(node)}")
            return self.splat(shape, float(flat[0]), dtype)
        if dtype in ("i32", "i64"):
            raise UnsupportedModuleError(
                f"{node.target}: a non-constant-valued integer tensor "
                f"computed from no input {where(node)}; only position ids "
                "of the form arange(start, start + n) are supported (as an "
                "embedding's ids)")
        return self.constant_parameter(value, node)

    def constant_parameter(self, value, node):
        """A frozen parameter holding a constant tensor (rotary tables)."""
        # By value: Hugging Face computes the rotary tables once per use.
        # A meta tensor has no value: each computation is its own.
        key = (value.dtype, tuple(value.shape),
               ("meta", id(value)) if value.is_meta else
               value.detach().contiguous().reshape(-1).view(torch.uint8)
               .numpy().tobytes())
        if key not in self.constants:
            name = f"const.{self.const_count}"
            self.const_count += 1
            shape = list(value.shape)
            if not shape:
                raise UnsupportedModuleError(
                    f"{node.target}: a rank-0 constant {where(node)}")
            param = self.graph.parameter(name, shape, _zero.Init.zeros())
            param.requires_grad = False
            if not value.is_meta:
                self.init_tensors[name] = value.detach().to(
                    torch.float32).clone()
            self.constant_names.append(name)
            self.constants[key] = (Live(param.value, shape,
                                        self.compute_dtype), value)
        live, _ = self.constants[key]
        wanted = DTYPES[value.dtype]
        if wanted == "f32":
            wanted = self.compute_dtype
        if wanted != live.dtype:
            cast = _zero.cast(live.tensor, wanted)
            return Live(cast, live.shape, wanted)
        return live

    # -- Placeholders --------------------------------------------------------

    def placeholders(self, user_inputs):
        if user_inputs:
            self.batch_rows = user_inputs[0].shape[0]
        signature = self.program.graph_signature
        state = self.program.state_dict
        constants = self.program.constants
        params = signature.inputs_to_parameters
        buffers = signature.inputs_to_buffers
        lifted = signature.inputs_to_lifted_tensor_constants
        named = dict(self.wrapper.named_parameters(remove_duplicate=False))
        user_index = 0
        for node in self.program.graph.nodes:
            if node.op != "placeholder":
                continue
            if node.name in params:
                path = params[node.name]
                tensor = state[path]
                self.values[node] = ("parameter", path, tensor,
                                     named.get(path))
            elif node.name in buffers:
                path = buffers[node.name]
                self.buffer_sources.append(path)
                tensor = state[path] if path in state else constants[path]
                self.values[node] = tensor
            elif node.name in lifted:
                self.values[node] = constants[lifted[node.name]]
            else:
                self.values[node] = user_inputs[user_index]
                user_index += 1

    def strip(self, path):
        return path[2:] if path.startswith("m.") else path

    def parameter(self, entry, node):
        """The zero parameter for a placeholder, made on first use; tied
        tensors (one tensor, several paths) share one."""
        _, source, tensor, module_param = entry
        path = source
        # Tied paths share a storage; on the meta device, where no tensor
        # has one, they share the module's Parameter object.
        key = (("meta", id(module_param if module_param is not None
                            else tensor)) if tensor.is_meta
               else tensor.data_ptr(), tuple(tensor.shape), tensor.stride())
        path = self.strip(path)
        if key not in self.parameters:
            dtype = dtype_name(tensor.dtype, f"parameter '{path}'")
            if dtype not in ("f32", "bf16", "f16"):
                raise UnsupportedModuleError(
                    f"parameter '{path}' is {tensor.dtype}; parameters are "
                    "float")
            shape = list(tensor.shape)
            if not shape or any(extent <= 0 for extent in shape):
                raise UnsupportedModuleError(
                    f"parameter '{path}' has shape {tuple(shape)}; the "
                    "importer takes parameters of rank >= 1 with positive "
                    "extents")
            # Declared f32: the configured precision decides the type it
            # computes in, with an f32 master where that is 16-bit.
            name = path
            param = self.graph.parameter(name, shape, _zero.Init.zeros())
            requires_grad = (module_param.requires_grad
                             if module_param is not None else True)
            if not requires_grad:
                param.requires_grad = False
            if not tensor.is_meta:
                self.init_tensors[name] = tensor.detach().to(
                    torch.float32).clone()
            self.parameters[key] = (name,
                                    Live(param.value, shape,
                                         self.compute_dtype))
            self.parameter_paths[name] = []
            self.parameter_sources[name] = []
        name, live = self.parameters[key]
        if path not in self.parameter_paths[name]:
            self.parameter_paths[name].append(path)
            self.parameter_sources[name].append(source)
        return live

    # -- The walk -------------------------------------------------------------

    def refuse_dynamic(self):
        """Control flow and data-dependent shapes, named before anything
        else fails on them."""
        for node in self.program.graph.nodes:
            if isinstance(node.target, torch._ops.HigherOrderOperator):
                raise UnsupportedModuleError(
                    f"control flow ({node.target.__name__}) {where(node)}: a "
                    "training step is one static graph; take the branch "
                    "outside the module, or compute both sides")
            value = node.meta.get("val")
            values = value if isinstance(value, (list, tuple)) else [value]
            for item in values:
                if isinstance(item, torch.Tensor) and any(
                        not isinstance(extent, int) for extent in item.shape):
                    raise UnsupportedModuleError(
                        f"{node.target} has a data-dependent shape "
                        f"{tuple(item.shape)} {where(node)}: every shape of "
                        "a step is fixed when it is compiled")

    def block_of(self, node):
        """The checkpointed block `node` computes in, or None."""
        stack = node.meta.get("nn_module_stack") or {}
        blocks = self.checkpoint[1]
        return next((path for path, _ in stack.values() if path in blocks),
                    None)

    def recompute_scopes(self):
        """For each node, the block whose scope is open while it is
        lowered: its block's, but None for a value that leaves its block
        (the block's output), which the backward recomputes from and so
        keeps, as torch.utils.checkpoint keeps a block's input and
        output."""
        if not self.checkpoint:
            return {}
        blocks = {node: self.block_of(node)
                  for node in self.program.graph.nodes}
        return {node: None if any(blocks.get(user) != block
                                  for user in node.users) else block
                for node, block in blocks.items() if block}

    def run(self):
        self.refuse_dynamic()
        # Under our wrapper's `m.`: the module's own paths.
        mutated = sorted(
            name[2:] if name.startswith("m.") else name
            for name in self.program.graph_signature.buffers_to_mutate
            .values())
        if mutated:
            # torch.export returns a buffer's new value as an extra output:
            # said before any op of the forward is looked at.
            raise UnsupportedModuleError(
                f"the module's forward updates buffer(s) {mutated} (as "
                "BatchNorm's running statistics do in training mode); the "
                "step trains parameters and cannot update a buffer: put "
                "those modules in eval() before the import (BatchNorm: or "
                "build it with track_running_stats=False), or make the "
                "update outside forward")
        scopes = self.recompute_scopes()
        mode = self.checkpoint[0] if self.checkpoint else None
        current, scope = None, None
        output = None
        for node in self.program.graph.nodes:
            wanted = scopes.get(node)
            if wanted != current:
                if scope is not None:
                    scope.__exit__(None, None, None)
                    scope = None
                if wanted is not None:
                    scope = self.graph.checkpoint(mode)
                    scope.__enter__()
                current = wanted
            if node.op == "placeholder":
                continue
            if node.op == "output":
                output = node.args[0]
                break
            if node.op != "call_function":
                raise UnsupportedModuleError(
                    f"a '{node.op}' node ({node.target}) {where(node)}: "
                    "the importer takes exported functional graphs")
            args = [self.resolve(a, node) for a in node.args]
            kwargs = {k: self.resolve(v, node) for k, v in node.kwargs.items()}
            if node.target in DROPPED:
                continue
            if self.foldable(args, kwargs):
                self.values[node] = self.fold(node, args, kwargs)
                continue
            try:
                self.values[node] = self.lower(node, args, kwargs)
            except (RuntimeError, NotImplementedError) as error:
                # A mapping that reads values (a mask's pattern, position
                # ids) of a tensor computed from meta-device buffers.
                if not self.plan_only or "meta" not in str(error).lower():
                    raise
                raise UnsupportedModuleError(
                    f"{node.target} {where(node)} reads the values of a "
                    "tensor computed from buffers on the meta device, to "
                    "tell what it is (a mask's pattern, position ids); a "
                    "plan from shapes alone cannot: build the module's "
                    "buffers on the CPU") from error
        if scope is not None:
            scope.__exit__(None, None, None)
        outputs = output if isinstance(output, (list, tuple)) else [output]
        if len(outputs) != 1:
            raise UnsupportedModuleError(
                f"the exported module returns {len(outputs)} values; it must "
                "return one tensor (the logits, or the loss)")
        result = self.values[outputs[0]]
        if not isinstance(result, Live):
            raise UnsupportedModuleError(
                "the module's output depends on no input and no trainable "
                "parameter")
        return result

    def resolve(self, value, node):
        """Arguments: placeholders of parameters become live values."""
        if isinstance(value, torch.fx.Node):
            resolved = self.arg(value)
            if isinstance(resolved, tuple) and resolved and resolved[0] == \
                    "parameter":
                return self.parameter(resolved, node)
            return resolved
        if isinstance(value, (list, tuple)):
            return [self.resolve(v, node) for v in value]
        return value

    def fold(self, node, args, kwargs):
        """Evaluates a node of constants with torch. For a module on the
        meta device, what the module creates on its own device (Hugging
        Face's masks and position ids, made on the embeddings' device) is
        created on the CPU, so that it has values; only what is computed
        from the module's meta buffers (rotary tables from inv_freq) stays
        without them."""
        if self.plan_only:
            meta = torch.device("meta")
            flat = torch.utils._pytree.tree_leaves((args, kwargs))
            if not any(isinstance(t, torch.Tensor) and t.is_meta
                       for t in flat):
                if kwargs.get("device") == meta:
                    kwargs = dict(kwargs, device=torch.device("cpu"))
            else:
                # What a meta tensor becomes stays on the meta device.
                if "device" in kwargs:
                    kwargs = dict(kwargs, device=meta)
                # Without values, equal constants are found by how they are
                # computed: the same op on the same tensors (a rotary table
                # unsqueezed again in every layer) gives the one result,
                # which constant_parameter then declares once, as it does
                # equal values.
                key = (node.target, repr(torch.utils._pytree.tree_map(
                    lambda t: ("tensor", id(t))
                    if isinstance(t, torch.Tensor) else t, (args, kwargs))))
                if key not in self.meta_folds:
                    args, kwargs = torch.utils._pytree.tree_map(
                        lambda t: t.to(meta) if isinstance(t, torch.Tensor)
                        else t, (args, kwargs))
                    # The arguments are kept, so that no id is reused.
                    self.meta_folds[key] = (node.target(*args, **kwargs),
                                            flat)
                return self.meta_folds[key][0]
        return node.target(*args, **kwargs)

    def foldable(self, args, kwargs):
        return all(self.is_constant(a) for a in args) and all(
            self.is_constant(v) for v in kwargs.values())

    def lower(self, node, args, kwargs):
        target = node.target
        if target is operator.getitem:
            return args[0][args[1]]
        honours = HONOURS.get(target) or _torch_masks.HONOURS.get(target)
        if honours is not None:
            check_arguments(node, honours, HINTS.get(target))
            args, kwargs = normalized(node, args, kwargs)
        elif target in IDENTITY or target in UNARY or target in RESHAPES \
                or target in HANDLERS:
            # By construction: a mapping with no declared arguments would
            # read some and drop the rest unseen.
            raise UnsupportedModuleError(
                f"internal: the importer maps {target} but declares none of "
                "its arguments as honoured (_torch_ops.HONOURS)")
        if target is not aten.scaled_dot_product_attention.default and \
                _torch_masks.holds_mask(args + list(kwargs.values())):
            return _torch_masks.lower(self, node, args, kwargs)
        if target in IDENTITY:
            return self.live(args[0], node)
        if target in UNARY:
            x = self.live(args[0], node)
            return Live(getattr(_zero, UNARY[target])(x.tensor), x.shape,
                        x.dtype)
        if target in RESHAPES:
            x = self.live(args[0], node)
            return self.reshape(x, meta_shape(node))
        handler = HANDLERS.get(target)
        if handler is None:
            hint = UNMAPPED.get(target)
            raise UnsupportedModuleError(
                f"ATen op '{target}' has no mapping to the train dialect "
                f"{where(node)}"
                + (f": {hint}" if hint else "; docs/torch.md lists the "
                   "supported ops"))
        return handler(self, node, args, kwargs)

    # -- Helpers ------------------------------------------------------------

    def reshape(self, x, shape):
        if list(shape) == x.shape:
            return x
        return Live(_zero.reshape(x.tensor, list(shape)), shape, x.dtype)

    def broadcast(self, x, shape, node):
        """`x` broadcast to `shape` as PyTorch does: size-1 and missing
        leading dims are repeated (reshape, then expand)."""
        shape = list(shape)
        if x.shape == shape:
            return x
        offset = len(shape) - len(x.shape)
        if offset < 0:
            raise UnsupportedModuleError(
                f"{node.target}: cannot broadcast {x.shape} to {shape} "
                f"{where(node)}")
        kept, new_dims = [], []
        for d, extent in enumerate(shape):
            source = d - offset
            if source >= 0 and x.shape[source] == extent:
                kept.append(extent)
            elif source < 0 or x.shape[source] == 1:
                new_dims.append(d)
            else:
                raise UnsupportedModuleError(
                    f"{node.target}: cannot broadcast {x.shape} to {shape} "
                    f"{where(node)}")
        squeezed = self.reshape(x, kept)
        return Live(_zero.expand(squeezed.tensor, shape, new_dims), shape,
                    x.dtype)

    def binary(self, node, a, b, op):
        shape = meta_shape(node)
        if isinstance(a, Live) and not isinstance(b, Live) and op == "mul" \
                and isinstance(b, (int, float)):
            return self.broadcast(
                Live(_zero.scale(a.tensor, float(b)), a.shape, a.dtype),
                shape, node)
        if isinstance(b, Live) and not isinstance(a, Live) and op == "mul" \
                and isinstance(a, (int, float)):
            return self.broadcast(
                Live(_zero.scale(b.tensor, float(a)), b.shape, b.dtype),
                shape, node)
        if isinstance(a, Live) and op == "div" and isinstance(b, (int, float)):
            return self.broadcast(
                Live(_zero.scale(a.tensor, 1.0 / float(b)), a.shape,
                     a.dtype), shape, node)
        like = a if isinstance(a, Live) else b
        out = Live(None, shape, like.dtype)
        a = self.broadcast(self.live(a, node, out), shape, node)
        b = self.broadcast(self.live(b, node, out), shape, node)
        if a.dtype != b.dtype:
            raise UnsupportedModuleError(
                f"{node.target}: operands of {a.dtype} and {b.dtype} "
                f"{where(node)}")
        return Live(getattr(_zero, op)(a.tensor, b.tensor), shape, a.dtype)
