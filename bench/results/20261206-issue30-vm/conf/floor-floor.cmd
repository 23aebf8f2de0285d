/work/main/_build/dev/bench/floor 50893 35737
