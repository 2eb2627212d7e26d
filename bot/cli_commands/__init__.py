"""One module per command group; each exposes ``register(subparsers)``.

A command's parser sets ``handler=fn`` where ``fn(args) -> int`` returns the exit code.
"""
