/work/main/_build/normal/bench/floor 41637 37393
