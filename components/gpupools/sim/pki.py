"""The sim cluster's certificates and keys: one CA, the API server's serving certificate, one client
certificate per component, and the service-account signing key.

Kubernetes authenticates a client certificate by its subject: CN is the user, O the groups
(``reference/access-authn-authz/authentication.md``, "X509 client certificates"). The components
use the identities the API server's bootstrap RBAC policy already binds
(``plugin/pkg/auth/authorizer/rbac/bootstrappolicy``): ``system:kube-controller-manager``,
``system:kube-scheduler``; the admin (kubeconfig, KWOK controller) is in ``system:masters``.
Everything is valid for 30 days and for 127.0.0.1 only: the cluster listens on loopback.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALIDITY = datetime.timedelta(days=30)
SERVICE_IP = "10.0.0.1"
"""The first address of the service range the API server is started with (``kubernetes`` Service)."""

CLIENTS = {
    "admin": ("kubernetes-admin", "system:masters"),
    "kube-controller-manager": ("system:kube-controller-manager", None),
    "kube-scheduler": ("system:kube-scheduler", None),
    "kwok": ("kwok-controller", "system:masters"),
}
"""File stem -> (CN, O) of each client certificate."""


@dataclass(frozen=True)
class Pki:
    """Paths of the files ``create`` writes into one directory."""

    dir: Path

    @property
    def ca_cert(self) -> Path:
        return self.dir / "ca.crt"

    @property
    def server_cert(self) -> Path:
        return self.dir / "apiserver.crt"

    @property
    def server_key(self) -> Path:
        return self.dir / "apiserver.key"

    @property
    def sa_key(self) -> Path:
        return self.dir / "sa.key"

    @property
    def sa_pub(self) -> Path:
        return self.dir / "sa.pub"

    def client_cert(self, name: str) -> Path:
        return self.dir / f"{name}.crt"

    def client_key(self, name: str) -> Path:
        return self.dir / f"{name}.key"


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.insert(0, x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> None:
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    path.chmod(0o600)


def _write_cert(path: Path, cert: x509.Certificate) -> None:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))


def _issue(
    subject: x509.Name,
    key: ec.EllipticCurvePrivateKey,
    issuer: x509.Name,
    issuer_key: ec.EllipticCurvePrivateKey,
    *,
    ca: bool = False,
    server: bool = False,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True)
    else:
        builder = builder.add_extension(
            x509.KeyUsage(True, False, True, False, False, False, False, False, False), critical=True
        ).add_extension(
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]),
            critical=False,
        )
    if server:
        builder = builder.add_extension(
            x509.SubjectAlternativeName(
                [
                    x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                    x509.IPAddress(ipaddress.ip_address(SERVICE_IP)),
                    x509.DNSName("localhost"),
                    x509.DNSName("kubernetes"),
                    x509.DNSName("kubernetes.default"),
                    x509.DNSName("kubernetes.default.svc"),
                    x509.DNSName("kubernetes.default.svc.cluster.local"),
                ]
            ),
            critical=False,
        )
    return builder.sign(issuer_key, hashes.SHA256())


def serving_pair(directory: Path, ca_common_name: str, server_common_name: str) -> bytes:
    """Write a fresh CA (``ca.crt``) and a serving certificate for 127.0.0.1 it signed (``tls.crt``,
    ``tls.key``) into ``directory``, for a local webhook server; returns the CA certificate (PEM), the
    ``caBundle`` its webhook configurations carry. The CA's key is not kept: nothing else is signed."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = _key()
    ca_name = _name(ca_common_name)
    ca = _issue(ca_name, ca_key, ca_name, ca_key, ca=True)
    key = _key()
    _write_key(directory / "tls.key", key)
    _write_cert(directory / "tls.crt", _issue(_name(server_common_name), key, ca_name, ca_key, server=True))
    _write_cert(directory / "ca.crt", ca)
    return (directory / "ca.crt").read_bytes()


def create(directory: Path) -> Pki:
    """Write a fresh CA, serving certificate, client certificates and service-account key pair."""
    directory.mkdir(parents=True, exist_ok=True)
    pki = Pki(directory)
    ca_key = _key()
    ca_name = _name("gpupools-sim-ca")
    _write_key(directory / "ca.key", ca_key)
    _write_cert(pki.ca_cert, _issue(ca_name, ca_key, ca_name, ca_key, ca=True))
    server_key = _key()
    _write_key(pki.server_key, server_key)
    _write_cert(pki.server_cert, _issue(_name("kube-apiserver"), server_key, ca_name, ca_key, server=True))
    for stem, (common_name, organization) in CLIENTS.items():
        key = _key()
        _write_key(pki.client_key(stem), key)
        _write_cert(pki.client_cert(stem), _issue(_name(common_name, organization), key, ca_name, ca_key))
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    _write_key(pki.sa_key, sa_key)
    pki.sa_pub.write_bytes(
        sa_key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return pki
