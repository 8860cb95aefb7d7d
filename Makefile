# The user's entry points (see README.md):
#   make run        install what is missing, build, and run the main job
#   make test       install what is missing, build, and run every test through ctest
#   make build      configure and build everything (tests, examples, benchmarks)
#   make test-asan  the test suite again, built with AddressSanitizer + UndefinedBehaviorSanitizer
#   make test-tsan  the threaded layers' tests (labels comm, exec, runtime, mpmd) built with ThreadSanitizer
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_ARGS ?=
CTEST_ARGS ?=

# ccache keys on paths relative to the checkout, so a fresh clone elsewhere (CI) reuses the cache.
export CCACHE_BASEDIR := $(CURDIR)
export CCACHE_NOHASHDIR := true

# Debian packages the build and the tests need (oneDNN runs f32 GEMMs, OpenBLAS f64 ones and f32
# where oneDNN is absent; NumPy is a test oracle; OpenMPI runs the MPI
# backend and its tests, label `mpi`; iproute2 makes the network namespaces of label `multihost`;
# Chromium renders the SVG pictures and Pillow reads its screenshots, label `browser`; pybind11 and
# the Python headers build the Python package, label `python`).
APT_PACKAGES := cmake g++ make ccache libopenblas-dev libdnnl-dev libfmt-dev nlohmann-json3-dev libcli11-dev \
                libgtest-dev libgmock-dev libbenchmark-dev python3 python3-numpy \
                libopenmpi-dev openmpi-bin iproute2 python3-torch fortunes chromium python3-pil \
                pybind11-dev python3-dev

.PHONY: deps configure build run test test-asan test-tsan clean

deps:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "Installing:" $$missing; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	  else \
	    echo "Missing Debian packages. Run:"; \
	    echo "  sudo apt-get install -y" $$missing; \
	    exit 1; \
	  fi; \
	fi

configure:
	cmake -S . -B $(BUILD) $(CMAKE_ARGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The main job: a byte-level CausalLM trained on Debian's fortunes, data parallel over 4 host devices,
# with the loss on the held-out last 10 % of the corpus every 100 steps. It builds only the CLI and
# the libraries it links (no tests, examples or benchmarks).
run: deps configure
	cmake --build $(BUILD) -j $(JOBS) --target tessera
	./$(BUILD)/bin/tessera train --plan dp --devices 4 --eval-every 100

test: deps build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) $(CTEST_ARGS)

test-asan:
	$(MAKE) test BUILD=build-asan CMAKE_ARGS="-DTESSERA_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug"

# ThreadSanitizer over the labels whose code runs threads: comm (host devices), exec (executables
# run by the Session on host-device threads), runtime, mpmd (pipeline stages). Only those tests are built. MPI is off in this build: OpenMPI is not
# TSan-clean, so the `mpi` tests (separate processes under mpirun) do not run here.
TSAN_LABELS := comm|exec|runtime|mpmd
test-tsan: deps
	cmake -S . -B build-tsan -DTESSERA_TSAN=ON -DTESSERA_MPI=OFF $(CMAKE_ARGS)
	cmake --build build-tsan -j $(JOBS) --target tests_comm tests_exec tests_runtime tests_mpmd
	ctest --test-dir build-tsan --output-on-failure -j $(JOBS) -L '$(TSAN_LABELS)' -LE mpi $(CTEST_ARGS)

clean:
	rm -rf build build-asan build-tsan
