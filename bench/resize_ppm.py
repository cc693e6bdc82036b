#!/usr/bin/env python3
"""Bilinear resize of a binary (P6) PPM to N x N or W x H, in plain Python: the bench machines have
no imaging libraries, and the benchmarks need 256² to 2048² images made from the small samples.
Usage: resize_ppm.py IN.ppm OUT.ppm N|WxH"""
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


def resize_numpy(np, width, height, pixels, out_width, out_height):
    """The same bilinear resize, vectorised, where numpy is installed (seconds instead of a
    minute for 2048²)."""
    image = np.frombuffer(pixels, np.uint8, width * height * 3).reshape(height, width, 3)
    def weights(samples):
        return (np.array([s[0] for s in samples]), np.array([s[1] for s in samples]),
                np.array([s[2] for s in samples]))
    x0, x1, tx = weights(axis(out_width, width))
    y0, y1, ty = weights(axis(out_height, height))
    image = image.astype(np.float64)
    tx, ty = tx[None, :, None], ty[:, None, None]
    top = image[y0][:, x0] * (1 - tx) + image[y0][:, x1] * tx
    bottom = image[y1][:, x0] * (1 - tx) + image[y1][:, x1] * tx
    return (top * (1 - ty) + bottom * ty + 0.5).astype(np.uint8).tobytes()


def main():
    source, target, size = sys.argv[1], sys.argv[2], sys.argv[3]
    out_width, out_height = map(int, size.split('x')) if 'x' in size else (int(size), int(size))
    width, height, pixels = read_ppm(source)
    try:
        import numpy as np
        out = resize_numpy(np, width, height, pixels, out_width, out_height)
        open(target, 'wb').write(b'P6\n%d %d\n255\n' % (out_width, out_height) + out)
        return
    except ImportError:
        pass
    xs, ys = axis(out_width, width), axis(out_height, height)
    out = bytearray(out_width * out_height * 3)
    for y, (y0, y1, ty) in enumerate(ys):
        row0, row1 = y0 * width * 3, y1 * width * 3
        for x, (x0, x1, tx) in enumerate(xs):
            for c in range(3):
                top = pixels[row0 + x0 * 3 + c] * (1 - tx) + pixels[row0 + x1 * 3 + c] * tx
                bottom = pixels[row1 + x0 * 3 + c] * (1 - tx) + pixels[row1 + x1 * 3 + c] * tx
                out[(y * out_width + x) * 3 + c] = int(top * (1 - ty) + bottom * ty + 0.5)
    open(target, 'wb').write(b'P6\n%d %d\n255\n' % (out_width, out_height) + bytes(out))


if __name__ == '__main__':
    main()
