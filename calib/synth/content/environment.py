"""The environment details Roo Code appends to the user's message: the one place its logs name the model."""

from __future__ import annotations

from calib.synth.content.project import Project


def roo_environment(prompt: str, model: str, project: Project) -> str:
    """`prompt` followed by Roo Code's `<environment_details>` block (mode, model and workspace)."""
    files = "\n".join(project.layout[:12])
    return (
        f"{prompt}\n\n<environment_details>\n# VSCode Visible Files\n\n\n# Current Mode\n<slug>code</slug>\n"
        f"<name>Code</name>\n<model>{model}</model>\n\n\n# Current Workspace Directory ({project.root}) Files\n"
        f"{files}\n</environment_details>"
    )
