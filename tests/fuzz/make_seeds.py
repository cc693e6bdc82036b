#!/usr/bin/env python3
"""Seed corpora for the fuzz targets of tests/fuzz, from real inputs: the test photos, the shipped
config, and requests of every unary method encoded by protoc from text (the requests target
reads one method-selector byte, then the request). Usage: make_seeds.py OUT_DIR [protoc]"""
import pathlib
import shutil
import struct
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROTO = 'svdserve/v1/svdserve.proto'
# The order of kMethods in requests_fuzzer.cpp.
METHODS = ['Decompose', 'Reconstruct', 'ReconstructBatch', 'Compress', 'GetImage', 'ListImages',
           'DeleteImage', 'GetServerInfo', 'GetStats', 'Echo', 'LoadDirectory', 'StartProfiling',
           'StopProfiling']


def text_bytes(data):
    return '"' + ''.join(f'\\{byte:03o}' for byte in data) + '"'


def encode(protoc, message, text):
    return subprocess.run([protoc, f'--encode=svdserve.v1.{message}', f'-I{ROOT / "proto"}',
                           PROTO], input=text.encode(), capture_output=True, check=True).stdout


def raw(width, height, channels, pixel_type, data):
    return (f'raw {{ width: {width} height: {height} channels: {channels} '
            f'type: {pixel_type} data: {text_bytes(data)} }}')


def main():
    out = pathlib.Path(sys.argv[1])
    protoc = sys.argv[2] if len(sys.argv) > 2 else 'protoc'
    photos = sorted((ROOT / 'tests/data/images').iterdir(), key=lambda p: p.stat().st_size)
    small_photo = photos[0].read_bytes()
    for name in ('image_decode', 'raw_image', 'config', 'requests'):
        (out / name).mkdir(parents=True, exist_ok=True)

    for photo in photos:
        shutil.copy(photo, out / 'image_decode' / photo.name)
    shutil.copy(ROOT / 'config/svdserve.textproto', out / 'config/svdserve.textproto')

    images = {
        'encoded': f'encoded: {text_bytes(small_photo)}',
        'u8': raw(4, 3, 3, 'PIXEL_TYPE_U8', bytes(range(36))),
        'u16': raw(2, 2, 1, 'PIXEL_TYPE_U16', struct.pack('<4H', 0, 1000, 40000, 65535)),
        'f32': raw(2, 2, 1, 'PIXEL_TYPE_F32', struct.pack('<4f', 0.0, 12.5, 255.0, 3e38)),
    }
    for name, text in images.items():
        (out / 'raw_image' / name).write_bytes(encode(protoc, 'ImageInput', text))

    requests = [
        ('Decompose', 'DecomposeRequest', f'image {{ {images["u8"]} }} id: "seed" max_rank: 2'),
        ('Decompose', 'DecomposeRequest', f'image {{ {images["encoded"]} }} max_rank: 8'),
        ('Reconstruct', 'ReconstructRequest', 'id: "seed" rank: 2 format: OUTPUT_FORMAT_PNG'),
        ('Reconstruct', 'ReconstructRequest', 'id: "seed" energy_fraction: 0.5'),
        ('ReconstructBatch', 'ReconstructBatchRequest',
         'items { id: "seed" rank: 1 } items { id: "none" rank: 1 }'),
        ('Compress', 'CompressRequest',
         f'image {{ {images["f32"]} }} rank: 1 format: OUTPUT_FORMAT_JPEG jpeg_quality: 50'),
        ('GetImage', 'GetImageRequest', 'id: "seed" include_singular_values: true'),
        ('ListImages', 'ListImagesRequest', 'include_evicted: true'),
        ('DeleteImage', 'DeleteImageRequest', 'id: "seed"'),
        ('Echo', 'EchoRequest', f'payload: {text_bytes(b"abc")} response_bytes: 64'),
        # The load root requests_fuzzer.cpp makes (where the temp folder is /tmp).
        ('LoadDirectory', 'LoadDirectoryRequest',
         'path: "/tmp/svdserve-fuzz-load-root/sub" recursive: true'),
    ]
    for index, (method, message, text) in enumerate(requests):
        selector = bytes([METHODS.index(method)])
        (out / 'requests' / f'{index:02d}-{method}').write_bytes(
            selector + encode(protoc, message, text))


if __name__ == '__main__':
    main()
