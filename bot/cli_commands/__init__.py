"""One module per command group; each exposes ``register(subparsers)``.

A command's parser sets ``handler=fn`` where ``fn(args) -> int`` returns the exit code.
"""

import argparse
from typing import TypeAlias

Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""What ``register`` receives: the value of ``ArgumentParser.add_subparsers()``."""
