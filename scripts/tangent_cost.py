#!/usr/bin/env python3
"""Multiplications per derivative direction a tangent-linear transformation adds.

cost = (mul_scal_scal + div_scal_scal intrinsics in the output) - (the same in the input)
       + (AX terms of Sax/Saxpy propagators in the output)

Usage: tangent_cost.py INPUT OUTPUT  -> prints the cost
"""
import re
import sys


def count(text, pattern):
    return len(re.findall(pattern, text))


def multiplications(text):
    return count(text, r'<xaif:Intrinsic[^>]*name="(?:mul|div)_scal_scal"')


def cost(input_text, output_text):
    return multiplications(output_text) - multiplications(input_text) + count(output_text, r"<xaif:AX>")


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        source = f.read()
    with open(sys.argv[2]) as f:
        result = f.read()
    print(cost(source, result))
