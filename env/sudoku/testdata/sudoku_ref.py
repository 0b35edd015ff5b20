# Reference of upstream's generation (spec envs.md §6) on CPython's random.
import random, json, math, sys
def gen(n, frac, seed):
    random.seed(seed)
    b = int(math.sqrt(n))
    g = [[0]*n for _ in range(n)]
    def valid(i, j, v):
        if v in g[i]: return False
        if any(g[k][j] == v for k in range(n)): return False
        bi, bj = i//b*b, j//b*b
        return all(g[r][c] != v for r in range(bi, bi+b) for c in range(bj, bj+b))
    def fill():
        for i in range(n):
            for j in range(n):
                if g[i][j] == 0:
                    nums = list(range(1, n+1)); random.shuffle(nums)
                    for v in nums:
                        if valid(i, j, v):
                            g[i][j] = v
                            if fill(): return True
                            g[i][j] = 0
                    return False
        return True
    fill()
    sol = [row[:] for row in g]
    cells = [(i, j) for i in range(n) for j in range(n)]
    random.shuffle(cells)
    p = [row[:] for row in sol]
    for (i, j) in cells[:int(n*n*frac)]:
        p[i][j] = 0
    return {"n": n, "frac": frac, "seed": seed, "solution": sol, "puzzle": p, "next_random": random.random()}
out = [gen(9, 0.4, 42), gen(9, 0.5, 0), gen(9, 0.6, 123), gen(4, 0.4, 7), gen(4, 0.6, 2024), gen(16, 0.5, 1)]
json.dump(out, open(sys.argv[1], "w"))
