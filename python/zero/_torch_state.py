"""The module stays the truth: what from_torch read of it, checked again
when trainer() is called (docs/torch.md, "The module after the import").

PyTorch trains the module as it is when the optimizer steps, so an edit
between the import and the trainer (a load_state_dict, a re-init, a
requires_grad_(False)) must reach the trainer or be refused. Weights are
read again; what the compiled step itself depends on (which parameters
train, their shapes and types, which ones are tied, the buffers the import
folded into constants) cannot change without importing again, and is
refused, naming the tensor.
"""

import zlib

import torch


def _checksum(tensor):
    """The CRC-32 of a tensor's bytes (its values, not its layout)."""
    flat = tensor.detach().contiguous().reshape(-1)
    return zlib.crc32(flat.view(torch.uint8).numpy())


def _storage_key(tensor):
    return (tensor.data_ptr(), tuple(tensor.shape), tensor.stride())


class _Record:
    __slots__ = ("paths", "shape", "dtype", "requires_grad", "checksum")

    def __init__(self, paths, tensor):
        self.paths = list(paths)
        self.shape = tuple(tensor.shape)
        self.dtype = tensor.dtype
        self.requires_grad = tensor.requires_grad
        self.checksum = _checksum(tensor)


def _shown(path):
    return path[2:] if path.startswith("m.") else path


class ModuleSnapshot:
    """What the import read of the module (by the importer's wrapper, whose
    paths are the module's under `m.`), to compare with it later."""

    def __init__(self, wrapper, parameter_sources, buffer_sources,
                 constants, follow_modes=False):
        self._wrapper = wrapper
        # Each submodule's training flag, where the import followed them.
        self._modes = ({path: child.training for path, child in
                        wrapper.named_modules()} if follow_modes else None)
        named = dict(wrapper.named_parameters(remove_duplicate=False))
        self._parameters = {
            name: _Record(paths, named[paths[0]])
            for name, paths in parameter_sources.items()}
        buffers = dict(wrapper.named_buffers(remove_duplicate=False))
        self._buffers = {path: _checksum(buffers[path])
                         for path in dict.fromkeys(buffer_sources)
                         if path in buffers}
        # The importer's own tensors (rotary tables): computed, not read.
        self._constants = dict(constants)

    def _current(self):
        """Our parameter name -> the module's tensor now, after checking
        that nothing the step depends on changed."""
        self._check_modes()
        named = dict(self._wrapper.named_parameters(remove_duplicate=False))
        current = {}
        owner_of = {}
        for name, record in self._parameters.items():
            for path in record.paths:
                if path not in named:
                    raise RuntimeError(
                        f"parameter '{_shown(path)}' is no longer in the "
                        "module: it changed since zero.from_torch; import "
                        "it again (from_torch) after changing it")
            tensor = named[record.paths[0]]
            what = f"parameter '{_shown(record.paths[0])}'"
            if tuple(tensor.shape) != record.shape or \
                    tensor.dtype != record.dtype:
                raise RuntimeError(
                    f"{what} is {tensor.dtype}{list(tensor.shape)} but was "
                    f"{record.dtype}{list(record.shape)} when the module was "
                    "imported: the compiled step is for the imported "
                    "shapes and types; import the module again (from_torch) "
                    "after changing it")
            if tensor.requires_grad != record.requires_grad:
                change = ("frozen (requires_grad False)"
                          if record.requires_grad else
                          "unfrozen (requires_grad True)")
                raise RuntimeError(
                    f"{what} was {change} after zero.from_torch: the "
                    "compiled step trains the parameters that had "
                    "requires_grad at the import; freeze or unfreeze before "
                    "from_torch (or import again)")
            key = _storage_key(tensor)
            for path in record.paths[1:]:
                if _storage_key(named[path]) != key:
                    raise RuntimeError(
                        f"{what} and '{_shown(path)}' were one tied tensor "
                        "when the module was imported and are two now: "
                        "import the module again (from_torch) after untying "
                        "them")
            if key in owner_of:
                raise RuntimeError(
                    f"{what} and parameter "
                    f"'{_shown(self._parameters[owner_of[key]].paths[0])}' "
                    "are one tensor now but were two when the module was "
                    "imported: import it again (from_torch) after tying "
                    "them")
            owner_of[key] = name
            current[name] = tensor
        buffers = dict(self._wrapper.named_buffers(remove_duplicate=False))
        for path, checksum in self._buffers.items():
            if path not in buffers or _checksum(buffers[path]) != checksum:
                raise RuntimeError(
                    f"buffer '{_shown(path)}' changed since zero.from_torch; "
                    "the import computed the step's constants from it: "
                    "import the module again (from_torch) after changing it")
        return current

    def _check_modes(self):
        if self._modes is None:
            return
        for path, child in self._wrapper.named_modules():
            was = self._modes.get(path)
            # "" is the importer's wrapper, not the user's.
            if not path or was is None or child.training == was:
                continue
            where = f"submodule '{_shown(path)}'" if path != "m" else \
                "the module"
            now, then = (("training", "eval") if child.training else
                         ("eval", "training"))
            raise RuntimeError(
                f"{where} is in {now} mode but was in {then} mode when "
                "zero.from_torch imported it (train=None follows the "
                "module's modes): the step was imported with "
                f"{'no dropout' if then == 'eval' else 'dropout'} there. "
                f"Call module.{'train' if now == 'training' else 'eval'}() "
                "before zero.from_torch, or pass from_torch(..., "
                "train=True or False)")

    def changed_weights(self):
        """The initial tensors (our names) if the module's weights changed
        since the import or the last call, else None; raises RuntimeError,
        naming the tensor, where what changed needs a new import."""
        current = self._current()
        checksums = {name: _checksum(tensor)
                     for name, tensor in current.items()}
        if all(checksums[name] == record.checksum
               for name, record in self._parameters.items()):
            return None
        for name, checksum in checksums.items():
            self._parameters[name].checksum = checksum
        tensors = {name: tensor.detach().to(torch.float32)
                   for name, tensor in current.items()}
        tensors.update(self._constants)
        return tensors
