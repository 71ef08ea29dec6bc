# The two commands of the README. Everything else is CMake.
#   make run    install missing Debian packages, build, run the main job
#   make test   install missing Debian packages, build, run every test
#   make docs   the measured tables and plots of README.md and docs/, from bench/results
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
RESULTS ?= $(BUILD_DIR)/results

.PHONY: run test build bootstrap clean docs tables plots

bootstrap:
	@scripts/bootstrap

build: bootstrap
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The main job: the verified GEMM ladder and baselines on this machine, as a
# table on stdout and CSV in $(RESULTS)/main.csv (about two minutes on 2 cores).
run: build
	@mkdir -p $(RESULTS)
	scripts/main-job $(BUILD_DIR)/parray $(RESULTS)

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD_DIR)

# The tables of measured figures in README.md and docs/ (between <!-- table: ... -->
# markers) and the plots in docs/img/, regenerated from bench/results. The plots need
# Debian's python3-matplotlib.
tables:
	scripts/doc-tables

plots:
	scripts/plots

docs: tables plots
