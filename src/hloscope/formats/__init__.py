"""Inputs other than HLO text: format detection by structure, and the HloProto schema."""
from hloscope.formats.detect import DetectedFormat, Format, detect_format

__all__ = ["DetectedFormat", "Format", "detect_format"]
