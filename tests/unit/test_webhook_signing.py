"""The webhook signature recipe (service.outbound.signing): what receivers are told to do."""

from __future__ import annotations

import hashlib
import hmac
import subprocess
import sys

from service.outbound.signing import (
    compute_signature,
    new_secret,
    signature_header,
    verify_signature,
)

BODY = b'{"id":"evt_1","type":"match.finished","data":{"winner":0}}'
T = 1_764_547_200


def test_signature_is_hmac_sha256_over_timestamp_dot_body() -> None:
    secret = new_secret()
    expected = hmac.new(secret.encode(), f"{T}.".encode() + BODY, hashlib.sha256).hexdigest()
    assert compute_signature(secret, T, BODY) == expected
    assert signature_header([secret], T, BODY) == f"t={T},v1={expected}"


def test_valid_signature_verifies_within_tolerance() -> None:
    secret = new_secret()
    header = signature_header([secret], T, BODY)
    assert verify_signature(secret, header, BODY, now=T)
    assert verify_signature(secret, header, BODY, now=T + 300)
    assert verify_signature(secret, header, BODY, now=T - 300)  # a receiver's clock behind


def test_tampered_body_wrong_secret_and_stale_timestamps_are_refused() -> None:
    secret = new_secret()
    header = signature_header([secret], T, BODY)
    assert not verify_signature(secret, header, BODY.replace(b"0", b"1"), now=T)
    assert not verify_signature(new_secret(), header, BODY, now=T)
    assert not verify_signature(secret, header, BODY, now=T + 301)
    assert not verify_signature(secret, header, BODY, now=T - 301)
    assert verify_signature(secret, header, BODY, now=T + 3600, tolerance=3600)
    # The timestamp is signed: moving it to look fresh breaks the signature.
    moved = header.replace(f"t={T}", f"t={T + 1000}")
    assert not verify_signature(secret, moved, BODY, now=T + 1000)


def test_rotation_header_carries_both_secrets_and_either_verifies() -> None:
    old, new = new_secret(), new_secret()
    header = signature_header([new, old], T, BODY)
    assert header.count("v1=") == 2 and header.startswith(f"t={T},v1=")
    assert verify_signature(new, header, BODY, now=T)
    assert verify_signature(old, header, BODY, now=T)
    assert not verify_signature(new_secret(), header, BODY, now=T)


def test_malformed_headers_are_refused_not_raised() -> None:
    secret = new_secret()
    good = compute_signature(secret, T, BODY)
    malformed = [
        "",
        "garbage",
        f"v1={good}",
        f"t={T}",
        f"t=abc,v1={good}",
        f"t=-{T},v1={good}",
        f"t=\u00b2,v1={good}",
        f"t={T},v1=",
        f"t={T},v1=é{good}",
        f"t={T},v0={good}",
    ]
    for header in malformed:
        assert not verify_signature(secret, header, BODY, now=T), header
    assert verify_signature(secret, f" t={T} , v0=zz , v1={good} ", BODY, now=T)


def test_secrets_are_random_and_prefixed() -> None:
    first, second = new_secret(), new_secret()
    assert first != second and first.startswith("whsec_") and len(first) > 40


def test_signing_module_imports_no_framework() -> None:
    code = (
        "import sys, service.outbound.signing\n"
        "print(sorted(m for m in ['flask', 'sqlalchemy', 'celery', 'marshmallow'] "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
