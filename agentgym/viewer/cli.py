"""``agentgym view``: browse training runs and leaderboards in a local page.

    agentgym view runs/grpo                       one run: curves, episodes by step, transcripts
    agentgym view runs/grpo runs/vspo boards/b1   runs side by side, and a board's episodes
    agentgym view runs/grpo --static site/        the same pages as files (open site/index.html)

A run is a trainer's --output-dir (metrics.jsonl, and episodes/ with --log-episodes); a board is an
`agentgym leaderboard --out` directory. The page is served on 127.0.0.1 at a free port (--port to
choose one) until Ctrl-C; it needs no network: its script and styles are its own. --static writes
into a new or empty folder, or over a site it wrote before, and names each source by its folder's
name, not its path.
"""

from __future__ import annotations

import argparse
import os
import sys

from agentgym.output_paths import OutputPathError, check_output_dir, disk_full, disk_full_message
from agentgym.viewer.sources import SourceError, open_sources
from agentgym.viewer.static import SiteFolderError, check_site_folder, write_static


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="agentgym view", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dirs", nargs="+", metavar="DIR", help="a training run's output directory or a leaderboard directory")
    p.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default 0: a free one)")
    p.add_argument("--static", metavar="OUT_DIR", default=None,
                   help="write the pages as files to OUT_DIR instead of serving them")
    return p


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.exit(2, f"agentgym view: error: --port must be in 0..65535, got {args.port}\n")
    try:
        sources = open_sources(args.dirs)
        if args.static is not None:
            check_site_folder(args.static)
            check_output_dir(args.static, "--static")
    except (SourceError, OutputPathError, SiteFolderError) as e:
        parser.exit(2, f"agentgym view: error: {e}\n")
    if args.static is not None:
        try:
            written = write_static(sources, args.static)
        except SourceError as e:  # a run still training rewrote a file while it was copied
            parser.exit(1, f"agentgym view: error: {e}\n")
        except OSError as e:
            if not disk_full(e):
                raise
            parser.exit(1, f"agentgym view: error: {disk_full_message('--static', args.static)}\n")
        print(f"agentgym view: wrote {written.bytes / 1024:.0f} KB to {args.static}; open "
              f"{os.path.join(args.static, 'index.html')}")
        if written.skipped_lines:
            print(f"agentgym view: skipped {written.skipped_lines} malformed line"
                  f"{'s' if written.skipped_lines != 1 else ''} of the episode files (not episodes; each "
                  "step's page names them)")
        if written.left_out:
            print(f"agentgym view: left out {written.left_out} file{'s' if written.left_out != 1 else ''} linked "
                  "from outside the directories given (each source's page names them)")
        return 0
    from agentgym.viewer.server import make_server

    try:
        server = make_server(sources, args.port)
    except OSError as e:
        parser.exit(1, f"agentgym view: error: cannot listen on 127.0.0.1:{args.port}: {e.strerror or e}\n")
    print(f"agentgym view: http://127.0.0.1:{server.server_address[1]}/  ({len(sources)} source"
          f"{'s' if len(sources) != 1 else ''}; Ctrl-C stops it)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
