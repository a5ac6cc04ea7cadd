#!/usr/bin/env bash
# PyTorch and Hugging Face transformers for zero.from_torch's tests
# (test/torch, docs/torch.md), into the python3 on PATH (the one the zero
# package is built for). torch 2.15's PyPI wheel brings the CUDA 13 runtime
# wheels: about 5.6 GB installed, about 4 minutes on the project's 2-core
# machine, so only `scripts/test.sh --all` (CI) calls this; the default tier
# shows the torch tests as unsupported. expecttest: torch's OpInfo samples
# (torch.testing._internal, test/torch/check_opinfo.py) import it. peft:
# LoRA adapters (test/torch/lora.test, examples/python/finetune.py).
#
#   ZERO_TORCH_VERSION, ZERO_TRANSFORMERS_VERSION, ZERO_PEFT_VERSION
#                                       override the pins
set -euo pipefail
torch_version="${ZERO_TORCH_VERSION:-2.15.0}"
transformers_version="${ZERO_TRANSFORMERS_VERSION:-5.24.0}"
peft_version="${ZERO_PEFT_VERSION:-0.21.2}"

installed() {
  python3 - "$torch_version" "$transformers_version" "$peft_version" <<'PY' 2>/dev/null
import sys
import expecttest, peft, safetensors, torch, transformers
ok = (torch.__version__.split("+")[0] == sys.argv[1]
      and transformers.__version__ == sys.argv[2]
      and peft.__version__ == sys.argv[3])
sys.exit(0 if ok else 1)
PY
}

if installed; then
  echo "setup-torch: torch $torch_version, transformers $transformers_version and peft $peft_version are installed"
  exit 0
fi
echo "setup-torch: installing torch==$torch_version transformers==$transformers_version peft==$peft_version (about 5.6 GB)"
start=$SECONDS
python3 -m pip install --quiet --disable-pip-version-check \
  "torch==$torch_version" "transformers==$transformers_version" \
  "peft==$peft_version" safetensors \
  "expecttest==0.3.0"
installed || {
  echo "setup-torch: torch, transformers or peft did not import after the install" >&2
  exit 1
}
echo "setup-torch: installed in $((SECONDS - start)) s"
