"""Model instances and LLM profiles: which model each slot of a turn calls, with which key.

A turn runs up to five stages in a fixed order (seed 003 section 5, DESIGN.md section 6):
director, memory retrieval, narrator, verifier, memory agent. Each stage belongs to an
instance *slot* (``narrator``, ``director``, ``verifier``, ``memory``) that a session enables or
not; ``compat_strict`` runs the narrator only.

Each slot calls the model of an :class:`LLMProfile`, found through :class:`ProfileBinding`
values, per slot independently, in this order::

    session + slot  >  realm + slot  >  session + *  >  realm + *  >  environment default

At the start of a turn the result is frozen into a :class:`ProfileSnapshot`, so a profile edited
while the turn runs does not change it. API keys are stored encrypted through a
:class:`SecretCipher` (the adapter derives its key from ``TAVERNBOT_SECRET_KEY``); with no secret
set, storing a key is refused with :class:`SecretKeyMissingError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Final, Literal, Protocol, get_args

from engine.errors import ConfigurationError

# --------------------------------------------------------------------------- slots and stages

Slot = Literal["narrator", "director", "verifier", "memory"]
SlotPattern = Literal["narrator", "director", "verifier", "memory", "*"]
WILDCARD: Final = "*"
SLOTS: Final[tuple[Slot, ...]] = get_args(Slot)
"""Every instance slot."""
OPTIONAL_SLOTS: Final[frozenset[Slot]] = frozenset({"director", "verifier"})
"""Slots that are off unless a session turns them on."""
DEFAULT_ENABLED_SLOTS: Final[frozenset[Slot]] = frozenset({"narrator", "memory"})

Stage = Literal["director", "memory_retrieval", "narrator", "verifier", "memory_agent"]
"""A turn's stages, listed in the order a turn runs them (:data:`STAGE_ORDER`)."""
STAGE_ORDER: Final[tuple[Stage, ...]] = get_args(Stage)
"""The order in which a turn runs its stages."""
STAGE_SLOT: Final[Mapping[Stage, Slot]] = MappingProxyType(
    {
        "director": "director",
        "memory_retrieval": "memory",
        "narrator": "narrator",
        "verifier": "verifier",
        "memory_agent": "memory",
    }
)
"""The slot whose enablement (and profile) each stage uses."""

COMPAT_STRICT: Final = "compat_strict"
"""The prompt mode that behaves like SillyTavern: the narrator alone."""


class SlotDisabledError(ConfigurationError):
    """The narrator slot is disabled, so no reply can be generated."""


def stages_for_turn(prompt_mode: str, enabled: Iterable[Slot]) -> tuple[Stage, ...]:
    """The stages a turn runs, in order, for a session's prompt mode and enabled slots.

    ``compat_strict`` runs the narrator only. Otherwise a stage runs when its slot is enabled.
    A disabled narrator is an error (seed 003 section 5): the other slots are simply skipped.
    """
    slots = frozenset(enabled)
    unknown = slots - frozenset(SLOTS)
    if unknown:
        raise ConfigurationError(
            f"unknown slot(s) {', '.join(sorted(unknown))}; expected one of {', '.join(SLOTS)}"
        )
    if "narrator" not in slots:
        raise SlotDisabledError(
            "the narrator slot is disabled for this session, so no reply can be generated"
        )
    if prompt_mode == COMPAT_STRICT:
        return ("narrator",)
    return tuple(stage for stage in STAGE_ORDER if STAGE_SLOT[stage] in slots)


def merge_sampling(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Shallow-merge generation parameters; a later layer wins (preset, profile, instance)."""
    merged: dict[str, Any] = {}
    for layer in layers:
        merged.update(layer)
    return merged


# --------------------------------------------------------------------------- secrets


class SecretCipher(Protocol):
    """Encrypts API keys for storage (implemented in ``adapters.secrets``)."""

    def encrypt(self, plaintext: str) -> str:
        """A versioned ciphertext for ``plaintext``; raises :class:`SecretKeyMissingError`
        when no secret key is configured."""
        ...

    def decrypt(self, ciphertext: str) -> str:
        """The plaintext of ``ciphertext``; raises :class:`SecretDecryptError` when it was
        made with another key, was altered, or is not a ciphertext at all."""
        ...


class SecretKeyMissingError(ConfigurationError):
    """An API key was to be stored or read but ``TAVERNBOT_SECRET_KEY`` is not set."""


class SecretDecryptError(ConfigurationError):
    """A stored API key could not be decrypted (another secret key, or damaged)."""


SECRET_KEY_VARIABLE: Final = "TAVERNBOT_SECRET_KEY"


class NoSecretCipher:
    """The cipher used when no secret key is configured: it refuses everything."""

    def encrypt(self, plaintext: str) -> str:
        """Always refuses: keys are never stored in the clear."""
        raise SecretKeyMissingError(
            f"refusing to store an API key: {SECRET_KEY_VARIABLE} is not set "
            "(set it to a long random string)"
        )

    def decrypt(self, ciphertext: str) -> str:
        """Always refuses: without the secret a stored key cannot be read."""
        raise SecretKeyMissingError(
            f"cannot read a stored API key: {SECRET_KEY_VARIABLE} is not set"
        )


# --------------------------------------------------------------------------- profiles

Provider = Literal["openai", "offline"]
PROVIDERS: Final[tuple[Provider, ...]] = get_args(Provider)
ENVIRONMENT_PROFILE_ID: Final = "environment"
ENVIRONMENT_KEY_VARIABLE: Final = "LLM_API_KEY"
DEFAULT_TIMEOUT_S: Final = 120.0
DEFAULT_MAX_RETRIES: Final = 3
MAX_RETRIES_LIMIT: Final = 10
"""A profile may ask for at most this many retries."""
MAX_PROFILE_ID_LENGTH: Final = 64


@dataclass(frozen=True, slots=True, kw_only=True)
class LLMProfile:
    """Which model to call and with which credentials.

    The key is either stored encrypted (``api_key_encrypted``, made by a
    :class:`SecretCipher`) or referenced by the name of an environment variable
    (``api_key_ref``); never in the clear. ``sampling`` holds defaults such as temperature.
    """

    id: str
    model: str
    provider: Provider = "openai"
    base_url: str | None = None
    api_key_encrypted: str | None = field(default=None, repr=False)
    api_key_ref: str | None = None
    sampling: Mapping[str, Any] = field(default_factory=dict)
    max_tokens: int | None = None
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_retries: int = DEFAULT_MAX_RETRIES
    name: str = ""

    def __post_init__(self) -> None:
        where = f"LLM profile {self.id!r}"
        if not self.id or len(self.id) > MAX_PROFILE_ID_LENGTH:
            raise ConfigurationError(
                f"{where}: the id must have 1 to {MAX_PROFILE_ID_LENGTH} characters"
            )
        if self.provider not in PROVIDERS:
            raise ConfigurationError(
                f"{where}: unknown provider {self.provider!r}; expected one of "
                f"{', '.join(PROVIDERS)}"
            )
        if self.api_key_encrypted is not None and self.api_key_ref is not None:
            raise ConfigurationError(
                f"{where}: give either an encrypted key or a key reference, not both"
            )
        if not self.timeout_s > 0:
            raise ConfigurationError(f"{where}: timeout_s must be > 0, got {self.timeout_s}")
        if not 0 <= self.max_retries <= MAX_RETRIES_LIMIT:
            raise ConfigurationError(
                f"{where}: max_retries must be between 0 and {MAX_RETRIES_LIMIT}, "
                f"got {self.max_retries}"
            )
        if self.max_tokens is not None and self.max_tokens <= 0:
            raise ConfigurationError(f"{where}: max_tokens must be > 0, got {self.max_tokens}")
        # A read-only copy: a snapshot must not change when the caller's dict does.
        object.__setattr__(self, "sampling", MappingProxyType(dict(self.sampling)))

    @property
    def has_api_key(self) -> bool:
        """Whether the profile carries or references a key."""
        return self.api_key_encrypted is not None or self.api_key_ref is not None

    def with_api_key(self, api_key: str | None, cipher: SecretCipher) -> LLMProfile:
        """A copy holding ``api_key`` encrypted by ``cipher`` (None removes the key).

        Raises :class:`SecretKeyMissingError` when the cipher has no secret.
        """
        if not api_key:
            return replace(self, api_key_encrypted=None, api_key_ref=None)
        return replace(self, api_key_encrypted=cipher.encrypt(api_key), api_key_ref=None)

    def reveal_api_key(self, cipher: SecretCipher, environ: Mapping[str, str]) -> str | None:
        """The plaintext key for a model call: decrypted, or read from ``environ`` by name.

        None when the profile has no key or the referenced variable is unset (servers such as
        Ollama need none). The caller must not log or store the result.
        """
        if self.api_key_encrypted is not None:
            return cipher.decrypt(self.api_key_encrypted)
        if self.api_key_ref is not None:
            return environ.get(self.api_key_ref) or None
        return None


def environment_profile(
    *,
    provider: Provider,
    base_url: str | None,
    model: str,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_retries: int = DEFAULT_MAX_RETRIES,
    api_key_ref: str | None = ENVIRONMENT_KEY_VARIABLE,
) -> LLMProfile:
    """The fallback profile built from the configuration (``LLM_*`` settings)."""
    return LLMProfile(
        id=ENVIRONMENT_PROFILE_ID,
        name="environment",
        provider=provider,
        base_url=base_url,
        model=model,
        api_key_ref=api_key_ref,
        timeout_s=timeout_s,
        max_retries=max_retries,
    )


# --------------------------------------------------------------------------- bindings

BindingScope = Literal["session", "realm"]
ResolutionSource = Literal["session+slot", "realm+slot", "session+*", "realm+*", "environment"]
RESOLUTION_ORDER: Final[tuple[tuple[BindingScope, bool, ResolutionSource], ...]] = (
    ("session", True, "session+slot"),
    ("realm", True, "realm+slot"),
    ("session", False, "session+*"),
    ("realm", False, "realm+*"),
)
"""(scope, exact slot?, name) in the order bindings are tried; the environment comes last."""


class UnknownProfileError(ConfigurationError):
    """A binding names a profile that does not exist."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileBinding:
    """Binds a profile to a slot (or ``*``) of one session or of a whole realm."""

    scope: BindingScope
    scope_id: str
    slot: SlotPattern
    profile_id: str

    def __post_init__(self) -> None:
        if self.scope not in ("session", "realm"):
            raise ConfigurationError(
                f"binding of profile {self.profile_id!r}: scope must be 'session' or 'realm', "
                f"got {self.scope!r}"
            )
        if self.slot != WILDCARD and self.slot not in SLOTS:
            raise ConfigurationError(
                f"binding of profile {self.profile_id!r}: unknown slot {self.slot!r}; expected "
                f"one of {', '.join(SLOTS)} or '*'"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class ResolvedProfile:
    """The profile a slot uses for one turn, and which rule chose it."""

    slot: Slot
    profile: LLMProfile
    source: ResolutionSource


def resolve_profile(
    slot: Slot,
    *,
    session_id: str,
    realm_id: str,
    bindings: Iterable[ProfileBinding],
    profiles: Mapping[str, LLMProfile],
    default: LLMProfile,
) -> ResolvedProfile:
    """The profile for ``slot`` of a session, by the resolution order; ``default`` last.

    Bindings of other sessions and realms are ignored. Two bindings for the same scope and
    slot, or a binding to a missing profile, raise :class:`ConfigurationError`.
    """
    if slot not in SLOTS:
        raise ConfigurationError(f"unknown slot {slot!r}; expected one of {', '.join(SLOTS)}")
    owners: dict[BindingScope, str] = {"session": session_id, "realm": realm_id}
    found: dict[tuple[BindingScope, str], ProfileBinding] = {}
    for binding in bindings:
        if binding.scope_id != owners[binding.scope]:
            continue
        if binding.slot not in (slot, WILDCARD):
            continue
        key = (binding.scope, binding.slot)
        other = found.get(key)
        if other is not None and other.profile_id != binding.profile_id:
            raise ConfigurationError(
                f"{binding.scope} {binding.scope_id!r} binds slot {binding.slot!r} twice "
                f"(profiles {other.profile_id!r} and {binding.profile_id!r})"
            )
        found[key] = binding
    for scope, exact, source in RESOLUTION_ORDER:
        chosen = found.get((scope, slot if exact else WILDCARD))
        if chosen is None:
            continue
        profile = profiles.get(chosen.profile_id)
        if profile is None:
            raise UnknownProfileError(
                f"{scope} {chosen.scope_id!r} binds slot {chosen.slot!r} to profile "
                f"{chosen.profile_id!r}, which does not exist"
            )
        return ResolvedProfile(slot=slot, profile=profile, source=source)
    return ResolvedProfile(slot=slot, profile=default, source="environment")


@dataclass(frozen=True, slots=True, kw_only=True)
class ProfileSnapshot:
    """The profiles of every slot, frozen at the start of a turn."""

    session_id: str
    realm_id: str
    by_slot: Mapping[Slot, ResolvedProfile]

    def resolved(self, slot: Slot) -> ResolvedProfile:
        """The resolution for ``slot``."""
        try:
            return self.by_slot[slot]
        except KeyError:
            raise ConfigurationError(f"slot {slot!r} is not in this turn's snapshot") from None

    def profile(self, slot: Slot) -> LLMProfile:
        """The profile ``slot`` uses in this turn."""
        return self.resolved(slot).profile


def snapshot_profiles(
    *,
    session_id: str,
    realm_id: str,
    bindings: Iterable[ProfileBinding],
    profiles: Mapping[str, LLMProfile],
    default: LLMProfile,
    slots: Iterable[Slot] = SLOTS,
) -> ProfileSnapshot:
    """Resolve every slot in ``slots`` once and freeze the result for a turn."""
    binding_list = tuple(bindings)
    profile_map = dict(profiles)
    by_slot = {
        slot: resolve_profile(
            slot,
            session_id=session_id,
            realm_id=realm_id,
            bindings=binding_list,
            profiles=profile_map,
            default=default,
        )
        for slot in slots
    }
    return ProfileSnapshot(
        session_id=session_id, realm_id=realm_id, by_slot=MappingProxyType(by_slot)
    )
