"""Backends by role, and the names each TE dialect gives their flags.

A hazard names its backend by role ("FA4"), because the same backend is spelt differently across
releases: FA2 is `use_flash_attention` in TE 1.9 - 2.1 (guarded by the module global
`_flash_attn_is_installed` from 1.12, by nothing before), and `use_flash_attention_2` guarded by
`FlashAttentionUtils.is_installed` from 2.2 on; FA3 is the module global `_use_flash_attn_3` in
TE 1.11 - 2.1 (`GATED_FLAGS`), `use_flash_attention_3` from 2.2. The lint plugin resolves a role
to the names a selector actually binds, and the codemod renders guards with those names.
Candidates are listed newest dialect first.
"""

from __future__ import annotations

from selector_patch.records import TupleRecord


class Role(TupleRecord):
    name: str
    #: How TE's log lines call the backend ("Disabling FlashAttention 4 ...").
    display: str
    #: Selector-local flag names, newest dialect first; the first one a selector binds wins.
    flags: tuple[str, ...]
    #: Expressions TE uses for "this backend's package is installed", newest dialect first.
    installed: tuple[str, ...] = ()
    #: The reference backend is exempt from the generic filter-coverage rules.
    reference: bool = False
    #: Major version of the flash-attn package behind the role, if any.
    flash_major: int | None = None
    #: Expressions holding the installed package's version, newest dialect first.
    versions: tuple[str, ...] = ()
    #: `NVTE_*` variables that turn the backend off ("0"), most specific first; a selector that
    #: does not read the first falls back to the next (TE 2.15 - 2.17 read no NVTE_FLASH_ATTN_V4).
    switches: tuple[str, ...] = ()
    #: Per `installed` expression, the flag saying TE already recommended installing the package.
    install_warned: tuple[str, ...] = ()
    #: Module-level bounds TE's import compares the installed version against before it calls
    #: the package installed (lowest accepted, highest accepted), newest dialect first.
    version_bounds: tuple[tuple[str, str], ...] = ()


#: TE 1.11 - 2.1's FlashAttention 3: a module global, set at import where flash-attn 3 is
#: installed and switched off (`global`) by the selector's filters; TE runs FA3 where the
#: selector returns `use_flash_attention` and the global is still set (FA2 where it is not).
FA3_GLOBAL = "_use_flash_attn_3"
#: Flags that select their backend only under another flag: the global under the flash flag.
GATED_FLAGS = {FA3_GLOBAL: "use_flash_attention"}

ROLES: dict[str, Role] = {
    role.name: role
    for role in (
        Role(
            "FA2",
            "FlashAttention 2",
            flags=("use_flash_attention_2", "use_flash_attention"),
            installed=("FlashAttentionUtils.is_installed", "_flash_attn_is_installed"),
            install_warned=("FlashAttentionUtils.warning_printed",),
            flash_major=2,
            versions=("FlashAttentionUtils.version", "_flash_attn_version"),
            version_bounds=(
                ("FlashAttentionUtils.version_required", "FlashAttentionUtils.max_version"),
                ("_flash_attn_version_required", "_flash_attn_max_version"),
            ),
            switches=("NVTE_FLASH_ATTN_V2", "NVTE_FLASH_ATTN"),
        ),
        Role(
            "FA3",
            "FlashAttention 3",
            flags=("use_flash_attention_3", FA3_GLOBAL),
            installed=(
                "FlashAttentionUtils.v3_is_installed",
                "_flash_attn_3_is_installed",
                "_flash_attn_3_plus",  # TE 1.11: installed at 2.6.1 or later
            ),
            install_warned=("FlashAttentionUtils.v3_warning_printed",),
            flash_major=3,
            versions=(
                "FlashAttentionUtils.fa3_version",
                "_flash_attn_3_version",
                "_flash_attn_v3_version",
            ),
            switches=("NVTE_FLASH_ATTN_V3", "NVTE_FLASH_ATTN"),
        ),
        Role(
            "FA4",
            "FlashAttention 4",
            flags=("use_flash_attention_4",),
            installed=("FlashAttentionUtils.v4_is_installed",),
            install_warned=("FlashAttentionUtils.v4_warning_printed",),
            flash_major=4,
            versions=("FlashAttentionUtils.fa4_version",),
            switches=("NVTE_FLASH_ATTN_V4", "NVTE_FLASH_ATTN"),
        ),
        Role(
            "FUSED", "FusedAttention", flags=("use_fused_attention",), switches=("NVTE_FUSED_ATTN",)
        ),
        Role(
            "UNFUSED",
            "UnfusedDotProductAttention",
            flags=("use_unfused_attention",),
            reference=True,
            switches=("NVTE_UNFUSED_ATTN",),
        ),
    )
}

#: The role TE's `FlashAttention` runs for a flash version it does not recognise.
FLASH_FALLBACK = "FA2"


def dispatched_role(major: int | None) -> str:
    """The flash role TE's `FlashAttention` runs for a returned flash version of this major.

    TE 2.2+ returns the chosen flash-attn version beside `use_flash_attention` and dispatches on
    it alone (`use_flash_attn_4 = backend is not None and backend.major == 4`, likewise 3): any
    other version - `None`, or the `PkgVersion("0")` TE holds for a package that is not
    installed - runs its flash-attn 2 code path.
    """
    return next(
        (r.name for r in ROLES.values() if major is not None and r.flash_major == major),
        FLASH_FALLBACK,
    )
