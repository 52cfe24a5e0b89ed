"""Verifies a gate bundle with securesystemslib and recomputes subject digests.

Usage: peer_verify.py ENVELOPE PUBLIC_PEM WORKSPACE
Prints one JSON object: the keyid securesystemslib computes for the key,
which keys verified, the payload type, and per subject whether the sha256
and blake3 digests in the statement match the workspace file.
Exits 1 (with the error on stderr) when verification fails.
"""

import hashlib
import json
import sys

import blake3
from cryptography.hazmat.primitives.serialization import load_pem_public_key
from securesystemslib.dsse import Envelope
from securesystemslib.signer import SSlibKey


def main() -> int:
    envelope_path, pub_path, workspace = sys.argv[1:4]
    with open(pub_path, "rb") as f:
        key = SSlibKey.from_crypto(load_pem_public_key(f.read()))
    with open(envelope_path, "rb") as f:
        envelope = Envelope.from_dict(json.load(f))
    try:
        accepted = envelope.verify([key], 1)
    except Exception as e:  # securesystemslib raises VerificationError
        print(f"{type(e).__name__}: {e}", file=sys.stderr)
        return 1
    statement = json.loads(envelope.payload)
    subjects = []
    for subject in statement["subject"]:
        with open(f"{workspace}/{subject['name']}", "rb") as f:
            data = f.read()
        subjects.append(
            {
                "name": subject["name"],
                "sha256": hashlib.sha256(data).hexdigest() == subject["digest"]["sha256"],
                "blake3": blake3.blake3(data).hexdigest() == subject["digest"]["blake3"],
            }
        )
    print(
        json.dumps(
            {
                "keyid": key.keyid,
                "accepted": sorted(accepted),
                "payload_type": envelope.payload_type,
                "statement_type": statement["_type"],
                "subjects": subjects,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
