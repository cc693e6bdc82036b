#!/usr/bin/env python3
"""Bilinear resize of a binary (P6) PPM to N x N, in plain Python: the bench machines have no
imaging libraries, and the end-to-end bench needs 256² and 1024² images next to the 512² sample.
Usage: resize_ppm.py IN.ppm OUT.ppm N"""
import sys


def read_ppm(path):
    data = open(path, 'rb').read()
    magic, size, maxval, pixels = data.split(b'\n', 3)
    if magic != b'P6' or maxval != b'255':
        sys.exit(f'{path}: expected an 8-bit binary PPM (P6, maxval 255)')
    width, height = map(int, size.split())
    return width, height, pixels


def axis(n_out, n_in):
    """For each output coordinate: the two input neighbours and the weight of the second."""
    samples = []
    for o in range(n_out):
        f = min(max((o + 0.5) * n_in / n_out - 0.5, 0.0), n_in - 1.0)
        i0 = int(f)
        samples.append((i0, min(i0 + 1, n_in - 1), f - i0))
    return samples


def main():
    source, target, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    width, height, pixels = read_ppm(source)
    xs, ys = axis(n, width), axis(n, height)
    out = bytearray(n * n * 3)
    for y, (y0, y1, ty) in enumerate(ys):
        row0, row1 = y0 * width * 3, y1 * width * 3
        for x, (x0, x1, tx) in enumerate(xs):
            for c in range(3):
                top = pixels[row0 + x0 * 3 + c] * (1 - tx) + pixels[row0 + x1 * 3 + c] * tx
                bottom = pixels[row1 + x0 * 3 + c] * (1 - tx) + pixels[row1 + x1 * 3 + c] * tx
                out[(y * n + x) * 3 + c] = int(top * (1 - ty) + bottom * ty + 0.5)
    open(target, 'wb').write(b'P6\n%d %d\n255\n' % (n, n) + bytes(out))


if __name__ == '__main__':
    main()
