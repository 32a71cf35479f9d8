"""`Image`, the reference's (google.genai's) image value: bytes with their MIME type, or a
Cloud Storage URI (`Part.as_image()` gives one for an image part)."""

from __future__ import annotations

import mimetypes
from pathlib import Path

from pydantic import ConfigDict

from baton.wire_model import StrictWireModel
from baton.wire_repr import ReferenceRepr

__all__ = ["Image"]


class Image(ReferenceRepr, StrictWireModel):
    """An image: its bytes and MIME type, or where it is kept (`gcs_uri`)."""

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64", extra="forbid")

    gcs_uri: str | None = None
    image_bytes: bytes | None = None
    mime_type: str | None = None

    @classmethod
    def from_file(cls, *, location: str, mime_type: str | None = None) -> Image:
        """An image read from a local file, or naming a Cloud Storage object.

        Args:
            location: a local path, a `gs://` URI or its `https://storage.googleapis.com/`
                form (not read: the image names it).
            mime_type: its MIME type (default: guessed from the name).

        Returns:
            The image.

        Raises:
            OSError: the local file cannot be read.
        """
        gcs_prefix = "https://storage.googleapis.com/"
        if location.startswith(gcs_prefix):
            location = "gs://" + location.removeprefix(gcs_prefix)
        if location.startswith("gs://"):
            return cls(gcs_uri=location, mime_type=mime_type)
        data = Path(location).read_bytes()
        return cls(image_bytes=data, mime_type=mime_type or mimetypes.guess_type(location)[0])

    def save(self, location: str) -> None:
        """Write the image's bytes to a local file.

        Raises:
            ValueError: the image has no bytes (it names a Cloud Storage object).
        """
        if self.image_bytes is None:
            raise ValueError(
                f"this image has no bytes to save (it is {self.gcs_uri!r}); download it "
                "from Cloud Storage instead."
            )
        Path(location).write_bytes(self.image_bytes)
