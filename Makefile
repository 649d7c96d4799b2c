# recops: the two commands of the README, plus the pieces they are made of.
#   make run   installs what is missing, builds, runs `recops check --smoke` (every op's cases once,
#              in their first dtype: under 3 minutes on two cores) on the CPU and a short
#              `recops bench` table
#   make test  builds and runs the whole suite: ctest, pytest, recops check, the sanitizer build,
#              the format check and the fuzzers
# Everything is installed by package name (Debian packages, PyPI); nothing is downloaded by hand.

SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
ROOT := $(abspath .)
BUILD ?= build
VENV ?= .venv
PY := $(ROOT)/$(VENV)/bin/python
JOBS ?= $(shell nproc)
RECOPS := $(ROOT)/$(BUILD)/bin/recops
CMAKE_ARGS ?=

APT_PACKAGES := cmake ninja-build g++ clang clang-format libclang-rt-14-dev libomp-dev ccache \
  libyaml-cpp-dev libcli11-dev nlohmann-json3-dev libgtest-dev libopenblas-openmp-dev
# torch is pinned to the release that PyPI's newest loadable fbgemm-gpu-cpu was built against
# (fbgemm-gpu-cpu 1.9.0's CPU wheel links libnvidia-ml and does not load without a GPU driver), so
# that the FBGEMM parity tests run in CI in the same process as recops. torchrec goes in without
# its dependency list (which names the GPU package fbgemm-gpu); what it imports is listed here.
# transformers (the HF Llama patch test of recops.compat.liger) goes in the same way, its
# dependencies named here: 4.57.6 runs on torch 2.13 and 2.15 and needs fewer packages than 5.x.
# tensorflow-cpu: the TensorFlow binding (src/tensorflow) and its tests, in the same venv as torch.
# onnx, onnxscript, onnxruntime and onnxruntime-extensions are recops.onnx's (export, and the
# sessions whose recops nodes run as extensions PyOps); with torch 2.13.0 pip resolves them to
# onnx 1.23.2, onnxscript 0.7.2, onnxruntime 1.32.0, extensions 0.15.2, numpy unchanged, protobuf
# 7.36.2 (which only onnx needs).
PY_PACKAGES := torch==2.13.0 fbgemm-gpu-cpu==1.8.0 tensorflow-cpu==2.21.0 numpy pytest pytest-xdist pyyaml safetensors \
  scikit-build-core ninja matplotlib tensordict torchmetrics==1.0.3 tqdm pyre-extensions iopath \
  huggingface-hub==0.36.2 tokenizers==0.22.2 regex requests filelock packaging \
  onnx onnxscript onnxruntime onnxruntime-extensions
PY_NODEPS := torchrec==1.8.0 transformers==4.57.6

.PHONY: run test deps deps-apt deps-py build check bench ctest pytest asan format format-check fuzz clean docs

run: deps build
	$(RECOPS) list
	$(RECOPS) check --backend cpu --smoke
	$(RECOPS) bench --backend cpu --quick

test: deps build
	@bash scripts/test_all.sh

deps: deps-apt deps-py

# Debian packages, installed only when one is missing.
deps-apt:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing:$$missing"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

# The Python environment: .venv with torch and the test tools; python/ is put on its path so that
# `.venv/bin/python -c "import recops"` works against the library built in build/.
deps-py: $(VENV)/.recops-deps

$(VENV)/.recops-deps: Makefile
	@[ -x $(PY) ] || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check $(PY_PACKAGES)
	$(PY) -m pip install -q --disable-pip-version-check --no-deps $(PY_NODEPS)
	@site=$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	  echo "$(ROOT)/python" > $$site/recops-dev.pth
	@touch $@

build: deps
	cmake -S . -B $(BUILD) -G Ninja -DPython3_EXECUTABLE=$(PY) $(CMAKE_ARGS)
	cmake --build $(BUILD) -j $(JOBS)
	@ln -sf $(BUILD)/compile_commands.json compile_commands.json

check: build
	$(RECOPS) check --backend cpu

bench: build
	$(RECOPS) bench --backend cpu --quick

# docs/ops.md from the op registry (`recops list --markdown`); ctest's ops_md_current checks it.
docs: build
	bash scripts/ops_md.sh $(RECOPS)

format:
	@git ls-files '*.h' '*.cpp' '*.cu' '*.cuh' | xargs clang-format -i

format-check:
	@git ls-files '*.h' '*.cpp' '*.cu' '*.cuh' | xargs clang-format --dry-run --Werror

clean:
	rm -rf $(BUILD) build-asan build-fuzz build-wheel
