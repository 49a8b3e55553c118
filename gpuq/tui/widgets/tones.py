"""A component class's style as a Rich style, its translucent colours blended first.

Textual's `get_component_rich_style` drops a colour's alpha (`$foreground-muted` is the foreground
at 60%, `$primary 40%` a tint): drawn as is, muted text reads as plain text and a tinted
background as a solid one. Widgets that draw segments themselves blend those colours over their
own background here.
"""

from __future__ import annotations

from rich.style import Style
from textual.widget import Widget

__all__ = ["component_style"]


def component_style(widget: Widget, name: str) -> Style:
    """The partial Rich style of `widget`'s component class `name`, translucent colours blended
    over the widget's background."""
    style = widget.get_component_rich_style(name, partial=True)
    styles = widget.get_component_styles(name)
    background = widget.background_colors[1]
    if styles.has_rule("background") and 0 < styles.background.a < 1:
        background = background + styles.background
        style += Style(bgcolor=background.rich_color)
    if styles.has_rule("color") and 0 < styles.color.a < 1:
        style += Style(color=(background + styles.color).rich_color)
    return style
