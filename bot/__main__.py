"""``python -m bot`` runs the tavernbot CLI."""

import sys

from bot.cli import main

sys.exit(main())
