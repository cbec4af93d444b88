"""Pair potentials declared with a class-based decorator, as molecular-simulation codes
register them, and the forces on a small cluster of atoms as minus the gradient of its
energy.

    python examples/pair_potentials.py

`@potential` is a class: it keeps each potential's units in a registry and calls the
function through `__call__(self, *args, **kwargs)`. derivo differentiates a decorated
function as the function it calls, whether it is given to derivo.grad itself or called
inside the energy.
"""
import functools

import numpy as np

import derivo


class potential:
    """Register a pair potential under its name, with the units its energy is in."""

    registry = {}

    def __init__(self, fn):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.units = "eV"
        potential.registry[fn.__name__] = self

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)


@potential
def lennard_jones(r, epsilon=1.0, sigma=1.0):
    s6 = (sigma / r) ** 6
    return 4.0 * epsilon * (s6 * s6 - s6)


@potential
def morse(r, depth=1.0, width=1.5, r0=1.12):
    e = np.exp(-width * (r - r0))
    return depth * (1.0 - e) ** 2


def cluster_energy(positions):
    """The Lennard-Jones energy of the atoms at ``positions`` (an (n, 3) array)."""
    total = 0.0
    for i in range(len(positions)):
        for j in range(i + 1, len(positions)):
            d = positions[i] - positions[j]
            total = total + lennard_jones(np.sqrt(np.sum(d * d)))
    return total


pair_force = derivo.grad(lennard_jones)      # dV/dr of the decorated potential
cluster_gradient = derivo.grad(cluster_energy)


def relax(positions, steps=100, rate=0.005):
    """Move the atoms down the energy: plain gradient descent on the forces."""
    for _ in range(steps):
        positions = positions - rate * cluster_gradient(positions)
    return positions


def main():
    r_min = 2.0 ** (1.0 / 6.0)
    print("dV/dr at the Lennard-Jones minimum", round(pair_force(r_min), 12))
    print("dV/dr of the Morse potential at 1.0", round(derivo.grad(morse)(1.0), 6))
    atoms = np.array([[0.0, 0.0, 0.0], [1.3, 0.0, 0.0], [0.5, 1.2, 0.0], [0.6, 0.4, 1.1]])
    print("energy before", round(cluster_energy(atoms), 4),
          potential.registry["lennard_jones"].units)
    relaxed = relax(atoms)
    print("energy after ", round(cluster_energy(relaxed), 4),
          "largest force", round(float(np.abs(cluster_gradient(relaxed)).max()), 6))


if __name__ == "__main__":
    main()
