# The two commands of the README, each doing its own set-up:
#   make test     install Debian packages, configure, build, run the test suite (CPU; GPU tests skip)
#   make figures  the main job: regenerate figures and paper (see README)
# Variables: BUILD (build folder, default build), JOBS (default: all cores),
#            RC_SEED (RapidCheck seed; default fixed, `make test RC_SEED=random` for a fresh one).
BUILD ?= build
JOBS ?= $(shell nproc)
RC_SEED ?= 20261129
CMAKE_FLAGS ?=

.PHONY: all setup configure build test test-gpu figures clean

all: build

setup:
	@bash scripts/setup-debian.sh

configure: setup
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	RC_SEED=$(RC_SEED) ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

# make figures: drivers -> CSV -> plots -> paper, outputs in $(FIG_OUT) (figures/, paper.pdf, results/).
# Uses its own CPU-only build folder $(FIG_BUILD) (the drivers need no GPU code) and builds only the
# drivers. `make figures GPU=1` first re-measures the H200 data with experiments/gpu/run_h200.sh
# (needs an NVIDIA GPU). See experiments/README.md.
FIG_OUT ?= out
FIG_BUILD ?= $(BUILD)-figures
GPU ?= 0
FIG_TARGETS ?= exp_machines exp_io_complexity exp_memory_vs_n exp_speedup_vs_n exp_block_size \
               exp_roofline exp_splitkv exp_kernel_ladder exp_h200_model exp_cpu_reference \
               exp_context_parallel

figures: setup
	cmake -S . -B $(FIG_BUILD) -DCMAKE_BUILD_TYPE=Release -DIOATTN_ENABLE_CUDA=OFF -DIOATTN_ENABLE_AMD_CHECK=OFF $(CMAKE_FLAGS)
	cmake --build $(FIG_BUILD) -j $(JOBS) --target $(FIG_TARGETS)
	/usr/bin/python3 experiments/make_figures.py --build $(FIG_BUILD) --out $(FIG_OUT) $(if $(filter 1,$(GPU)),--gpu,)

# plots/fig_decode.py models v07 with `ioattn simulate` (the simulator's layout options).
FIG_TARGETS += ioattn

clean:
	rm -rf $(BUILD)
