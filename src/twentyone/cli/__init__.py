"""The ``twentyone`` command: one verb per job."""

from pathlib import Path


def png_path_refusal(path: Path, option: str) -> str | None:
    """Why ``path`` cannot take a PNG picture (``option`` names the flag), or None.

    Checked before the work: matplotlib picks the format from the suffix, so a name without ``.png`` failed after a
    whole simulation with a traceback, or wrote ``NAME.png`` beside it, ``/tmp`` as ``/tmp.png`` (an analyst's trial).

    >>> png_path_refusal(Path("chart.txt"), "--png")
    "--png writes a PNG picture: give a file name ending in .png, got 'chart.txt'."
    >>> png_path_refusal(Path("chart.png"), "--png") is None
    True
    """
    if path.suffix.lower() != ".png":
        return f"{option} writes a PNG picture: give a file name ending in .png, got {str(path)!r}."
    if not path.parent.is_dir():
        return f"cannot write {str(path)!r} (no folder {str(path.parent)!r})."
    return None
