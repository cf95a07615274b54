"""Host names for `grpo-tui serve` (no third-party imports: the CLI checks flags before the extra loads)."""

from __future__ import annotations

import ipaddress


def is_loopback(host: str) -> bool:
    """localhost, 127.0.0.0/8 or ::1 (a host name other than localhost is not loopback)."""
    h = host.strip().strip("[]").lower()
    if h == "localhost":
        return True
    try:
        return ipaddress.ip_address(h).is_loopback
    except ValueError:
        return False


def url_host(host: str) -> str:
    """A host as it goes in a URL (IPv6 in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
