"""A hidden Markov model fitted to text by expectation-maximisation, its E step the
gradient of the log partition function (after autograd's examples/hmm_em.py).

    log Z(log pi, log A, log B) = log sum over state paths of p(path, characters)

computed by the forward algorithm (logsumexp over the previous state, one step per
character); the gradient in the natural parameters (log pi, log A, log B) is the
expected count of each start, transition and emission, which the M step
normalises.  The data is a list of lines and the log partition function sums over
it by ``map(partial(...))``, as the original does.

    python examples/hmm_em.py
"""
import string
from functools import partial

import numpy as np
from scipy.special import logsumexp

import derivo

TEXT = """the quick brown fox jumps over the lazy dog
a hidden markov model reads the characters one at a time
each state emits a character and moves to the next state
the expected counts come from the gradient of the log partition function"""


def log_partition_function(natural_params, data):
    if isinstance(data, list):
        return sum(map(partial(log_partition_function, natural_params), data))
    log_pi, log_A, log_B = natural_params
    log_alpha = log_pi
    for y in data:
        log_alpha = logsumexp(log_alpha[:, None] + log_A, axis=0) + log_B[:, y]
    return logsumexp(log_alpha)


def normalize(a):
    def replace_zeros(a):
        return np.where(a > 0.0, a, 1.0)
    return a / replace_zeros(a.sum(-1, keepdims=True))


#: (log Z, the expected counts of starts, transitions and emissions)
expected_counts = derivo.value_and_grad(log_partition_function)


def EM_update(params, data):
    natural_params = list(map(np.log, params))
    loglike, E_stats = expected_counts(natural_params, data)
    return loglike, list(map(normalize, E_stats))


def encode(text):
    encodings = {char: i for i, char in enumerate(string.printable)}
    lines = [np.array([encodings.get(char, len(encodings)) for char in line])
             for line in text.splitlines() if len(line) > 2]
    return lines, len(encodings) + 1


def initial_parameters(num_states, num_outputs, rs):
    return [normalize(rs.rand(num_states)), normalize(rs.rand(num_states, num_states)),
            normalize(rs.rand(num_states, num_outputs))]


def main():
    np.seterr(divide="ignore")  # a count that reached 0 has log -inf, as in the original
    data, num_outputs = encode(TEXT)
    params = initial_parameters(4, num_outputs, np.random.RandomState(0))
    loglikes = []
    for _ in range(15):
        loglike, params = EM_update(params, data)
        loglikes.append(loglike)
        print("log likelihood {:.4f}".format(loglike))
    # EM never lowers the likelihood: the gradient gave the exact expected counts
    assert all(b >= a - 1e-8 for a, b in zip(loglikes, loglikes[1:])), loglikes
    assert loglikes[-1] > loglikes[0] + 1.0


if __name__ == "__main__":
    main()
