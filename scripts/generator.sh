# Sourced by the build scripts: `generator_for DIR` sets the array `generator` to the CMake
# generator options for build directory DIR. Ninja when it is installed and DIR is new: it starts
# compiling a target's sources while the targets it links are still being built, where make waits
# for them (the CLI's commands beside the compiled library's last groups). An existing build
# directory keeps the generator it was configured with.
generator_for() {
  generator=()
  if [ ! -f "$1/CMakeCache.txt" ] && command -v ninja >/dev/null 2>&1; then
    generator=(-G Ninja)
  fi
}
