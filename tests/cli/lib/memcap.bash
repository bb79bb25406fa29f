# memcap KIB: `ulimit -v KIB` in the calling (sub)shell, so an unbounded allocation fails the
# test instead of eating the machine; a no-op under a sanitizer build, whose runtime reserves
# terabytes of address space at start and cannot run under such a cap.
memcap() {
  "$bin" --version 2>/dev/null | grep -q 'sanitizer' || ulimit -v "$1"
}
