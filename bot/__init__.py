"""The composition root: config, lifecycle, scheduler and the tavernbot CLI."""
