"""The Discord adapter's modules import each other in one direction: the runner builds the
client and registers the commands; neither imports the runner back (not even for types)."""

from __future__ import annotations

import grimp
import pytest

RUNNER = "adapters.discord.runner"
COMMANDS = "adapters.discord.commands"


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("adapters")


@pytest.mark.parametrize("module", [COMMANDS, "adapters.discord.client"])
def test_nothing_the_runner_builds_imports_the_runner(
    graph: grimp.ImportGraph, module: str
) -> None:
    chains = graph.find_shortest_chains(importer=module, imported=RUNNER)
    assert not chains, f"{module} reaches the runner through {sorted(chains)}"


def test_the_runner_sees_the_commands_through_their_package_alone(
    graph: grimp.ImportGraph,
) -> None:
    command_modules = {COMMANDS, *graph.find_descendants(COMMANDS)}
    imported = graph.find_modules_directly_imported_by(RUNNER) & command_modules
    assert imported == {COMMANDS}
    from adapters.discord import commands

    assert commands.__all__ == ["CommandDeps", "register"]
