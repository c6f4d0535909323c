"""markov-tokens.py OUT.u8 COUNT: COUNT tokens (u8, of 64) from a fixed random Markov
chain, each token followed by one of 4 others with weights 4:3:2:1. Like text, it
has a loss floor (the chain's entropy, 1.28 nats) a model approaches but never
reaches; a periodic file (i * 7 % 64) is memorized instead, its loss going to 0,
where any small difference between two runs becomes a large relative one."""
import random
import sys

r = random.Random(7)
successors = [r.sample(range(64), 4) for _ in range(64)]
token, out = 0, bytearray()
for _ in range(int(sys.argv[2])):
    out.append(token)
    token = r.choices(successors[token], weights=[4, 3, 2, 1])[0]
open(sys.argv[1], "wb").write(out)
