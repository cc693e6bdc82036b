#!/usr/bin/env python3
"""svdserve's CPU backend over gRPC on loopback against numpy in-process, on the same photos and
the same cores, in one run: decompose (SVD of every channel, max rank 64), reconstruct (rank 32
from held factors, rounded to u8 HWC) and compress (both).

numpy's way is the seed implementation: per channel np.linalg.svd(plane, full_matrices=False),
then (U[:, :k] * S[:k]) @ Vt[:k], rounded and clipped to u8. It runs twice, once with its BLAS
threads over all cores (one image at a time) and once as one single-threaded process per core;
the table keeps the faster and says which. svdserve runs as `svdserve --backend cpu`, started and
stopped here, driven by `svdserve-cli bench`.

Photos come from --images DIR (or SVDSERVE_TEST_IMAGES, else tests/data/images); the server
decodes each one (so JPEG and PNG need no Python imaging library), it is resized here to
SIZE x SIZE (bilinear, as bench/resize_ppm.py) and written as PPM for both sides.

Usage: bench/cpu_vs_numpy.py [--svdserve build/server/svdserve]
         [--cli build/client/svdserve-cli] [--images DIR] [--size 1024] [--photos 3]
         [--rank 32] [--max-rank 64] [--duration 5] [--concurrency 2*cores] [--port 50071]
"""
import argparse
import contextlib
import json
import multiprocessing
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parent.parent
READY_TIMEOUT_S = 60
STOP_TIMEOUT_S = 30
BLAS_THREAD_VARIABLES = ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS',
                         'BLIS_NUM_THREADS')
WORKS = ('decompose', 'reconstruct', 'compress')


# --- photos ----------------------------------------------------------------------------------

def read_ppm(path):
    data = pathlib.Path(path).read_bytes()
    magic, size, maxval, pixels = data.split(b'\n', 3)
    if magic != b'P6' or maxval != b'255':
        raise ValueError(f'{path}: expected an 8-bit binary PPM (P6, maxval 255)')
    width, height = map(int, size.split())
    return np.frombuffer(pixels, np.uint8, width * height * 3).reshape(height, width, 3)


def write_ppm(path, image):
    height, width, _ = image.shape
    pathlib.Path(path).write_bytes(b'P6\n%d %d\n255\n' % (width, height) + image.tobytes())


def bilinear_axis(n_out, n_in):
    """bench/resize_ppm.py's sampling: pixel centres, edges clamped."""
    f = np.clip((np.arange(n_out) + 0.5) * n_in / n_out - 0.5, 0.0, n_in - 1.0)
    i0 = f.astype(np.int64)
    return i0, np.minimum(i0 + 1, n_in - 1), (f - i0)


def resize(image, n):
    y0, y1, wy = bilinear_axis(n, image.shape[0])
    x0, x1, wx = bilinear_axis(n, image.shape[1])
    data = image.astype(np.float64)
    rows = data[y0] * (1 - wy)[:, None, None] + data[y1] * wy[:, None, None]
    out = rows[:, x0] * (1 - wx)[None, :, None] + rows[:, x1] * wx[None, :, None]
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def prepare_photos(cli, folder, size, count, out_dir):
    """Decodes each photo on the server at full rank, writes it back as PPM, resizes it here."""
    sources = sorted(p for p in pathlib.Path(folder).iterdir()
                     if p.suffix.lower() in ('.jpg', '.jpeg', '.png', '.ppm', '.bmp', '.tif'))
    photos = []
    for source in sources:
        if len(photos) == count:
            break
        decomposed = cli_json(cli, 'decompose', str(source), '--id', 'numpy-bench-source',
                              '--max-rank', '4096')
        result = decomposed['results'][0]
        if not result.get('ok') or result['channels'] != 3:
            cli_run(cli, 'delete', 'numpy-bench-source', check=False)
            continue  # PPM is RGB: grey and RGBA photos are left out
        full = out_dir / f'{source.stem}_full.ppm'
        cli_run(cli, 'reconstruct', 'numpy-bench-source', '--rank', str(result['rank_kept']),
                '-o', str(full))
        cli_run(cli, 'delete', 'numpy-bench-source')
        resized = out_dir / f'{source.stem}_{size}.ppm'
        write_ppm(resized, resize(read_ppm(full), size))
        photos.append(resized)
    if not photos:
        sys.exit(f'cpu_vs_numpy: no RGB photos in {folder}')
    return photos


# --- numpy -----------------------------------------------------------------------------------

def np_decompose(image, max_rank):
    factors = []
    for channel in range(image.shape[2]):
        u, s, vt = np.linalg.svd(image[:, :, channel], full_matrices=False)
        factors.append((u[:, :max_rank], s[:max_rank], vt[:max_rank]))
    return factors


def np_reconstruct(factors, rank):
    height, width = factors[0][0].shape[0], factors[0][2].shape[1]
    out = np.empty((height, width, len(factors)), np.uint8)
    for channel, (u, s, vt) in enumerate(factors):
        plane = (u[:, :rank] * s[:rank]) @ vt[:rank]
        out[:, :, channel] = np.clip(np.rint(plane), 0, 255)
    return out


def np_work(work, image, factors, rank, max_rank):
    if work == 'decompose':
        np_decompose(image, max_rank)
    elif work == 'reconstruct':
        np_reconstruct(factors, rank)
    else:
        np_reconstruct(np_decompose(image, max_rank), rank)


def np_images_per_second(work, photos, rank, max_rank, duration):
    """One process: every photo in turn for `duration` seconds after one warm-up pass."""
    images = [read_ppm(p).astype(np.float32) for p in photos]
    factors = [np_decompose(image, max_rank) for image in images]
    for image, held in zip(images, factors):
        np_work(work, image, held, rank, max_rank)
    done = 0
    start = time.perf_counter()
    while time.perf_counter() - start < duration:
        index = done % len(images)
        np_work(work, images[index], factors[index], rank, max_rank)
        done += 1
    return done / (time.perf_counter() - start)


def np_worker(arguments):
    return np_images_per_second(*arguments)


def np_process_per_core(work, photos, rank, max_rank, duration, cores):
    """One single-threaded process per core, all at once; their rates add up."""
    saved = {name: os.environ.get(name) for name in BLAS_THREAD_VARIABLES}
    os.environ.update({name: '1' for name in BLAS_THREAD_VARIABLES})
    try:
        # spawn: each child imports numpy afresh, with the one-thread settings above.
        with multiprocessing.get_context('spawn').Pool(cores) as pool:
            rates = pool.map(np_worker, [(work, photos, rank, max_rank, duration)] * cores)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return sum(rates)


def blas_description():
    try:
        import threadpoolctl  # optional: present on some hosts, never required
        pools = threadpoolctl.threadpool_info()
        return '; '.join(f"{p.get('internal_api')} {p.get('version')} "
                         f"({p.get('num_threads')} threads)" for p in pools) or 'unknown'
    except ImportError:
        pass
    # The BLAS numpy actually loaded (Debian's libblas.so.3 is an alternatives link).
    try:
        maps = pathlib.Path('/proc/self/maps').read_text().split()
    except OSError:
        return 'see numpy.show_config()'
    libraries = sorted({os.path.realpath(path) for path in maps
                        if path.startswith('/') and any(name in os.path.basename(path).lower()
                                                         for name in ('blas', 'mkl'))})
    return ', '.join(libraries) or 'see numpy.show_config()'


# --- svdserve --------------------------------------------------------------------------------

def cli_run(cli, *arguments, check=True):
    return subprocess.run(cli + list(arguments), check=check, capture_output=True, text=True)


def cli_json(cli, *arguments):
    return json.loads(cli_run(cli[:1] + ['--json'] + cli[1:], *arguments).stdout)


@contextlib.contextmanager
def running_server(binary, cli, port):
    server = subprocess.Popen([binary, '--config', str(ROOT / 'config/svdserve.textproto'),
                               '--listen', f'127.0.0.1:{port}', '--backend', 'cpu',
                               '--log-level', 'warn'])
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        # Health answers SERVING only once the server is ready; each probe waits up to 1 s.
        while cli_run(cli, '--timeout', '1', 'health', check=False).returncode != 0:
            if server.poll() is not None:
                sys.exit(f'cpu_vs_numpy: the server exited with {server.returncode}')
            if time.monotonic() > deadline:
                sys.exit(f'cpu_vs_numpy: the server was not ready within {READY_TIMEOUT_S} s')
            time.sleep(0.1)
        yield server
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def svdserve_images_per_second(cli, work, photos, rank, max_rank, duration, concurrency):
    """`svdserve-cli bench` on each photo for `duration`; the mean of their rates."""
    rates = []
    for photo in photos:
        arguments = ['bench', '--op', work, '--image', str(photo), '--max-rank', str(max_rank),
                     '--concurrency', str(concurrency), '--duration', str(duration),
                     '--warmup', str(concurrency), '--json', '-']
        if work != 'decompose':
            arguments += ['--rank', str(rank)]
        report = json.loads(cli_run(cli, *arguments).stdout)
        if report['errors']:
            sys.exit(f'cpu_vs_numpy: {work} on {photo.name} failed: {report["errors"]}')
        rates.append(report['images_per_second'])
    return sum(rates) / len(rates)


# --- the run ---------------------------------------------------------------------------------

def main():
    cores = os.cpu_count() or 1
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--svdserve', default=str(ROOT / 'build/server/svdserve'))
    parser.add_argument('--cli', default=str(ROOT / 'build/client/svdserve-cli'))
    parser.add_argument('--images', default=os.environ.get('SVDSERVE_TEST_IMAGES',
                                                           str(ROOT / 'tests/data/images')))
    parser.add_argument('--size', type=int, default=1024)
    parser.add_argument('--photos', type=int, default=3)
    parser.add_argument('--rank', type=int, default=32)
    parser.add_argument('--max-rank', type=int, default=64)
    parser.add_argument('--duration', type=float, default=5.0, help='seconds per measurement')
    parser.add_argument('--concurrency', type=int, default=2 * cores)
    parser.add_argument('--port', type=int, default=50071)
    args = parser.parse_args()
    cli = [args.cli, '--server', f'127.0.0.1:{args.port}']

    with tempfile.TemporaryDirectory(prefix='cpu_vs_numpy.') as folder, \
            running_server(args.svdserve, cli, args.port):
        photos = prepare_photos(cli, args.images, args.size, args.photos, pathlib.Path(folder))
        print(f'{len(photos)} photos at {args.size}x{args.size} RGB ({", ".join(p.stem for p in photos)}); '
              f'rank {args.rank}, max rank {args.max_rank}; {cores} cores; numpy {np.__version__} '
              f'with {blas_description()}', flush=True)
        rows = []
        for work in WORKS:
            threaded = np_images_per_second(work, photos, args.rank, args.max_rank, args.duration)
            per_core = np_process_per_core(work, photos, args.rank, args.max_rank, args.duration,
                                           cores)
            ours = svdserve_images_per_second(cli, work, photos, args.rank, args.max_rank,
                                              args.duration, args.concurrency)
            best, how = max((threaded, 'BLAS threads'), (per_core, f'{cores} processes'))
            rows.append((work, best, how, threaded, per_core, ours))
            print(f'  {work}: numpy {threaded:.1f} (BLAS threads) / {per_core:.1f} '
                  f'({cores} processes), svdserve {ours:.1f} images/s', flush=True)

    print()
    print(f'{"work":<12} {"numpy img/s":>12} {"numpy as":>14} {"svdserve img/s":>15} '
          f'{"svdserve/numpy":>15}')
    for work, best, how, _, _, ours in rows:
        print(f'{work:<12} {best:>12.1f} {how:>14} {ours:>15.1f} {ours / best:>15.2f}')
    print(f'\nsvdserve: CPU backend over gRPC on loopback, {args.concurrency} callers; numpy: '
          f'in-process, the faster of its BLAS threads and one process per core.')


if __name__ == '__main__':
    main()
