"""``python -m gpupools.pricing <command>``: the price tables' maintenance commands.

``refresh`` (``gpupools.pricing.refresh``) rebuilds a cloud's table from the clouds' public price
APIs (networked); ``import-vms-csv`` (``gpupools.pricing.import_vms_csv``) imports regions from a
public catalog file in SkyPilot's ``vms.csv`` layout. Without a command, or with ``--help``, it lists them.
"""

from __future__ import annotations

import sys
from typing import Callable, Sequence

from gpupools.pricing import import_vms_csv, refresh

PROG = "python -m gpupools.pricing"

COMMANDS: dict[str, tuple[str, Callable[[Sequence[str]], int]]] = {
    "refresh": (
        "rebuild a cloud's price table from its public price APIs (networked: AWS Price List and Spot history, Azure Retail Prices)",
        lambda argv: refresh.main(["refresh", *argv]),
    ),
    "import-vms-csv": (
        "import regions from a catalog file in SkyPilot's vms.csv layout, checked against the table's reference region",
        import_vms_csv.main,
    ),
}
"""Each command: one line of help, and its entry point (taking the arguments after the command name)."""


def usage() -> str:
    """The top-level help: every command with its one line, and how to get each command's own help."""
    width = max(len(name) for name in COMMANDS)
    lines = [f"usage: {PROG} {{{','.join(COMMANDS)}}} ...", "", "Maintain gpupools' offline price tables.", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {summary}" for name, (summary, _) in COMMANDS.items()]
    lines += ["", f"'{PROG} <command> --help' shows a command's options."]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command ``argv`` names; exit status 2 for a missing or unknown command."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        (sys.stdout if args else sys.stderr).write(usage())
        return 0 if args else 2
    command = COMMANDS.get(args[0])
    if command is None:
        sys.stderr.write(usage())
        if args[0].startswith("-"):  # argparse's wording, as every gpupools tool (gpupools._cli)
            sys.stderr.write(f"{PROG}: error: unrecognized arguments: {' '.join(args)}\n")
        else:
            sys.stderr.write(f"{PROG}: error: unknown command {args[0]!r} (choose from {', '.join(COMMANDS)})\n")
        return 2
    return command[1](args[1:])


if __name__ == "__main__":
    sys.exit(main())
