"""Batch synthesis on a running voicemesh edge with the stock openai SDK: submit a few lines as one
job, follow its progress (queue position, items done), and download each item's audio. Batch items
run only on capacity live calls leave idle, so a job never slows a live caller.

Run (with `voicemesh up` running; it prints the API key):

    VOICEMESH_API_KEY=vm-... python examples/speech_batch.py batch-out/

With `--webhook-url`, the edge also POSTs the finished job there, signed; a receiver checks it with
`client.webhooks.verify_signature(body, headers, secret=...)` (the secret is printed once, here).
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path
from typing import Any

import httpx
from openai import AsyncOpenAI

LINES = [
    "Welcome to lesson one.",
    "Today we learn to count to ten.",
    "Repeat after me: one, two, three.",
]


async def main(args: argparse.Namespace) -> None:
    client = AsyncOpenAI(api_key=args.key, base_url=args.url)
    body: dict[str, Any] = {
        "items": [
            {"model": "tts-1", "voice": "alloy", "input": line, "response_format": "wav"} for line in LINES
        ]
    }
    if args.webhook_url:
        body["webhook"] = {"url": args.webhook_url}
    job = await client.post("/speech/batches", body=body, cast_to=dict)
    print(f"batch {job['id']}: {job['counts']['total']} items, {job['status']}")
    if job.get("webhook"):
        print(f"webhook secret (shown once): {job['webhook']['secret']}")
    while job["status"] in ("queued", "in_progress"):
        await asyncio.sleep(1.0)
        job = await client.get(f"/speech/batches/{job['id']}", cast_to=dict)
        c = job["counts"]
        print(
            f"  {job['status']}: {c['completed']}/{c['total']} done, queue position {job['queue_position']}"
        )
    out = Path(args.out)
    await asyncio.to_thread(out.mkdir, parents=True, exist_ok=True)
    headers = {"Authorization": f"Bearer {args.key}"}
    root = args.url.removesuffix("/v1")
    async with httpx.AsyncClient(base_url=root, headers=headers, timeout=60) as http:
        for item in job["items"]:
            if item["status"] != "completed":
                print(f"item {item['index']}: {item['status']} {item.get('error')}")
                continue
            audio = (await http.get(item["url"])).raise_for_status().content
            path = out / f"item-{item['index']}.wav"
            await asyncio.to_thread(path.write_bytes, audio)
            print(f"item {item['index']}: {path} ({len(audio)} bytes, by {', '.join(item['regions'])})")
    print(f"batch {job['id']}: {job['status']}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", nargs="?", default="batch-out", help="directory for the items' WAVs")
    parser.add_argument("--url", default="http://127.0.0.1:8080/v1")
    parser.add_argument("--key", default=os.environ.get("VOICEMESH_API_KEY"))
    parser.add_argument("--webhook-url", default="", help="where the edge POSTs the finished job, signed")
    asyncio.run(main(parser.parse_args()))
