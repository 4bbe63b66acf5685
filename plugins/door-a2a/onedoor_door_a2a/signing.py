"""Signed agent cards (A2A's ``signatures``, a2a-sdk's signer): :func:`card_signer`.

With ``-o a2a.signing_key=FILE`` (a PEM private key: EC P-256/P-384/P-521, RSA or Ed25519)
every card the door serves (the public one, the extended one, over SLIM too) carries a
detached JWS over the card's canonical JSON (RFC 8785), made by a2a-sdk's
``create_agent_card_signer``: the protected header holds the algorithm (from the key:
ES256/ES384/ES512, RS256, EdDSA; ``signing_alg`` to choose another the key allows),
``typ: JOSE``, the key id (``signing_kid``, default: the RFC 7638 thumbprint of the public
key) and, when set, ``signing_jku`` (where a verifier finds the key set). A verifier
needs the public key (``openssl pkey -pubout``): a client checks a card with a2a-sdk's
``create_signature_verifier``. Signing needs PyJWT: ``pip install 'onedoor-door-a2a[signing]'``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from onedoor import CompositionError


def _algorithm(key: Any) -> str:
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

    if isinstance(key, ec.EllipticCurvePrivateKey):
        by_curve = {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}
        if key.curve.name not in by_curve:
            raise CompositionError(f"a2a.signing_key: the EC curve {key.curve.name} has no JWS algorithm; "
                                   "use P-256, P-384 or P-521")
        return by_curve[key.curve.name]
    if isinstance(key, rsa.RSAPrivateKey):
        return "RS256"
    if isinstance(key, ed25519.Ed25519PrivateKey):
        return "EdDSA"
    raise CompositionError("a2a.signing_key: use an EC (P-256/P-384/P-521), RSA or Ed25519 private key")


def _b64(data: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _number(value: int, size: int = 0) -> str:
    return _b64(value.to_bytes(size or (value.bit_length() + 7) // 8 or 1, "big"))


def thumbprint(key: Any) -> str:
    """RFC 7638: the SHA-256 of the public key's required JWK members, base64url."""
    import hashlib
    import json

    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa

    public = key.public_key()
    if isinstance(public, ec.EllipticCurvePublicKey):
        point, size = public.public_numbers(), (public.curve.key_size + 7) // 8
        crv = {"secp256r1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"}[public.curve.name]
        members = {"crv": crv, "kty": "EC", "x": _number(point.x, size), "y": _number(point.y, size)}
    elif isinstance(public, rsa.RSAPublicKey):
        rsa_numbers = public.public_numbers()
        members = {"e": _number(rsa_numbers.e), "kty": "RSA", "n": _number(rsa_numbers.n)}
    else:  # Ed25519 (OKP)
        raw = public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        members = {"crv": "Ed25519", "kty": "OKP", "x": _b64(raw)}
    return _b64(hashlib.sha256(json.dumps(members, separators=(",", ":"), sort_keys=True).encode()).digest())


def card_signer(key_file: str, *, kid: str = "", alg: str = "", jku: str = "") -> Callable[[Any], Any]:
    """A function that appends a signature to an AgentCard; CompositionError (at start-up)
    when the key cannot be used."""
    try:
        from a2a.utils.signing import create_agent_card_signer
        from cryptography.hazmat.primitives.serialization import load_pem_private_key
    except ImportError as exc:
        raise CompositionError(f"signed cards need PyJWT ({exc}): pip install 'onedoor-door-a2a[signing]'") from None
    from a2a.types import AgentCard

    path = Path(key_file).expanduser()
    try:
        pem = path.read_bytes()
        key = load_pem_private_key(pem, password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise CompositionError(f"a2a.signing_key: cannot read a PEM private key from {path} "
                               f"({type(exc).__name__}: {str(exc)[:120]})") from None
    algorithm = alg or _algorithm(key)
    header: dict[str, Any] = {"alg": algorithm, "typ": "JOSE", "kid": kid or thumbprint(key)}
    if jku:
        header["jku"] = jku
    signer = create_agent_card_signer(pem, protected_header=header)  # type: ignore[arg-type]
    try:
        signer(AgentCard(name="onedoor signing check", version="0"))  # the key signs with that algorithm
    except Exception as exc:  # noqa: BLE001 - PyJWT's errors (an algorithm the key does not do, unknown names)
        raise CompositionError(f"a2a.signing_key: the key does not sign with {algorithm} "
                               f"({type(exc).__name__}: {str(exc)[:120]})") from None
    return signer


__all__ = ["card_signer"]
