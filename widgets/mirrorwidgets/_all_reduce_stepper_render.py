"""The all-reduce stepper drawn as HTML, one frame per step (design: docs/design/widgets.md)."""

from __future__ import annotations

import math
import uuid
from itertools import accumulate

from mirrorkit.report import style
from mirrorkit.report.units import format_size
from mirrorkit.report.values import number, short_device
from mirrorwidgets._render import FONT, esc

RING = ("collective", "nccl")

# A cell's tone: how much of the sum it holds. (background, border, label)
TONES = {
    "own": (style.WHITE, style.BORDER, "its own values only"),
    "part": (style.INFO_BG, style.BORDER, "a partial sum"),
    "all": (style.GOOD_BG, style.GOOD, "the sum of every replica"),
    "short": (style.BAD_BG, style.BAD, "the end, yet not every replica's values"),
}
RECEIVED = style.BLUE  # outline of a cell that received a chunk in this step
SENT = style.ORANGE  # dashed outline of a cell that was sent in this step


def new_id() -> str:
    """An id for one output: two steppers on one page never share an id or a style rule."""
    return f"mws-{uuid.uuid4().hex[:8]}"


def holders_text(held: frozenset, n: int) -> str:
    """Whose values a cell sums: ``"Σ 0,1 · 2/4"``, ``"Σ 0-2,5 · 4/8"``, ``"Σ all 4 · 4/4"``.

    Runs of three or more consecutive replicas are written ``a-b``.
    """
    if len(held) == n:
        return f"Σ all {n} · {n}/{n}"
    runs: list[list[int]] = []
    for replica in sorted(held):
        if runs and replica == runs[-1][-1] + 1:
            runs[-1].append(replica)
        else:
            runs.append([replica])
    text = ",".join(
        f"{run[0]}-{run[-1]}" if len(run) >= 3 else ",".join(map(str, run)) for run in runs
    )
    return f"Σ {text} · {len(held)}/{n}"


def cell_number(x: float) -> str:
    """How a cell writes one value: as every report does, and NaN or infinity as such."""
    return number(x) if math.isfinite(x) else str(x)


class Drawing:
    """What every frame of one replay shares, worked out once; draws frames and snapshots."""

    def __init__(self, replay):
        self.replay = replay
        plan = replay.schedule
        self.n = plan.replicas
        self.chunks = plan.chunks
        self.last = len(plan.steps)
        self.bounds = replay.chunk_bounds
        self.itemsize = replay.itemsize
        self.step_bytes = replay.step_bytes()
        self.so_far = [0, *accumulate(self.step_bytes)]
        self.total = self.so_far[-1]
        self.ring_total = 2 * (self.n - 1) / self.n * replay.nbytes
        self.left_out = frozenset(plan.left_out())
        self.devices = [short_device(d) for d in replay.devices]
        self._shown: dict[tuple[int, int], list[list[str]]] = {}
        self._verdict: str | None = None
        self._headline: str | None = None

    # ------------------------------------------------------------------ pieces

    def numbers(self, step: int, count: int) -> list[list[str]]:
        """Per replica and chunk, the chunk's first ``count`` numbers after ``step`` steps."""
        key = (step, count)
        if key not in self._shown:
            buffers = self.replay.buffers(step)
            self._shown[key] = [
                [
                    [cell_number(x) for x in buffer[lo : min(lo + count, hi)].tolist()]
                    for lo, hi in self.bounds
                ]
                for buffer in buffers
            ]
        return self._shown[key]

    def headline(self) -> str:
        if self._headline is None:
            self._headline = " ".join(self.replay.report().headline)
        return self._headline

    def verdict_html(self) -> str:
        """The replay's own verdict lines (its report), as the last frame shows them."""
        if self._verdict is None:
            lines = [line for line in self.replay.report().lines if line.label]
            self._verdict = "".join(line.html() for line in lines)
        return self._verdict

    def header_html(self, title: str = "") -> str:
        heading = esc(title or self.headline())
        swatches = "".join(
            f'<span class="mws-key" style="background:{bg};border-color:{border}">'
            f"{esc(label)}</span>"
            for tone, (bg, border, label) in TONES.items()
            if tone != "short" or self.left_out  # only an end that misses a replica is short
        )
        moves = (
            f'<span class="mws-key" style="outline:2px solid {RECEIVED};outline-offset:-2px">'
            "received this step</span>"
            f'<span class="mws-key" style="outline:2px dashed {SENT};outline-offset:-2px">'
            "sent this step</span>"
        )
        lost = ""
        if self.left_out:
            who = ", ".join(map(str, sorted(self.left_out)))
            lost = (
                f'<div class="mws-lost" style="color:{style.BAD}">replica {who} is left out: '
                "its values are never sent, so no result holds them</div>"
            )
        return (
            f'<div class="mws-title"><strong>{heading}</strong></div>'
            f'<div class="mws-legend">{swatches}{moves}</div>{lost}'
        )

    # ------------------------------------------------------------------ one frame

    def frame_html(self, step: int, count: int, nav: str = "") -> str:
        """Step ``step`` (0: the inputs; ``last``: the result) as one ``.mws-frame`` div.

        ``nav`` is the id of the snapshot the frame belongs to: its frames carry labels
        that check the radio input of the previous, next or any step.
        """
        plan = self.replay.schedule
        moved = plan.steps[step - 1] if step else None
        parts = [self._nav_html(step, nav) if nav else "", self._what_html(step, moved)]
        parts.append(self._grid_html(step, count, moved))
        if moved is not None:
            parts.append(self._moves_html(moved))
        parts.append(self._bytes_html(step))
        if step == self.last:
            parts.append(f'<div class="mws-verdict">{self.verdict_html()}</div>')
        end = ' data-last="yes"' if step == self.last else ""
        return f'<div class="mws-frame" data-step="{step}"{end}>{"".join(parts)}</div>'

    def _nav_html(self, step: int, uid: str) -> str:
        def button(target: int, text: str, css: str) -> str:
            if 0 <= target <= self.last:
                return f'<label for="{uid}-{target}" class="{css}">{text}</label>'
            return f'<span class="{css} mws-off">{text}</span>'

        numbers = "".join(
            f'<span class="mws-at">{s}</span>'
            if s == step
            else f'<label for="{uid}-{s}">{s}</label>'
            for s in range(self.last + 1)
        )
        return (
            f'<div class="mws-nav">{button(step - 1, "&#9664; previous", "mws-prev")}'
            f'<span class="mws-goto">step {numbers}</span>'
            f"{button(step + 1, 'next &#9654;', 'mws-next')}"
            '<span class="mws-keys">(keyboard: Tab here, then the arrow keys)</span></div>'
        )

    def summary(self, step: int) -> str:
        """Step ``step`` in one line (the live region's, a radio's name): ``"step 1 of 6: ..."``."""
        moved = self.replay.schedule.steps[step - 1] if step else None
        phase, what = (moved.phase, moved.what) if moved else ("inputs", "nothing sent yet")
        end = " (the result)" if step == self.last else ""
        return f"step {step} of {self.last}{end}: {phase}: {what}"

    def _what_html(self, step: int, moved) -> str:
        if moved is None:
            phase = "inputs"
            what = "each replica holds its own values; nothing has been sent yet"
        else:
            phase, what = moved.phase, moved.what
        end = " (the result)" if step == self.last else ""
        return (
            f'<div class="mws-what"><strong>step {step} of {self.last}{end}</strong> '
            f'<span class="mws-phase" style="color:{style.PURPLE}">{esc(phase)}</span>: '
            f"{esc(what)}</div>"
        )

    def _grid_html(self, step: int, count: int, moved) -> str:
        shown = self.numbers(step, count)
        held = self.replay.holders(step)
        into: dict[tuple[int, int], list[str]] = {}
        out: dict[tuple[int, int], list[str]] = {}
        if moved is not None:
            for t in moved.transfers:
                sign = "+" if t.combine == "add" else "="
                into.setdefault((t.target, t.chunk), []).append(f"{t.source}{sign}")
                out.setdefault((t.source, t.chunk), []).append(str(t.target))
        head = "".join(
            f"<th>{'chunk ' + str(c) if self.chunks > 1 else 'whole tensor'}"
            f'<div class="mws-sub">values {lo:,}-{hi - 1:,}</div></th>'
            for c, (lo, hi) in enumerate(self.bounds)
        )
        rows = []
        for rep in range(self.n):
            lost = rep in self.left_out
            mark = (
                f'<div class="mws-lost" style="color:{style.BAD}">left out: never sent</div>'
                if lost
                else ""
            )
            cells = []
            for c in range(self.chunks):
                h = held[rep][c]
                k = len(h)
                tone = (
                    "all"
                    if k == self.n
                    else "short"
                    if step == self.last
                    else "own"
                    if k == 1
                    else "part"
                )
                css, notes = [], ""
                if (rep, c) in into:
                    css.append("mws-to")
                    notes += f'<div class="mws-in">← {" ".join(into[rep, c])}</div>'
                if (rep, c) in out:
                    css.append("mws-from")
                    notes += f'<div class="mws-out">→ {" ".join(out[rep, c])}</div>'
                marks = f' class="{" ".join(css)}"' if css else ""
                paint = "" if tone == "own" else f' style="background:{TONES[tone][0]}"'
                # Kept small: a snapshot holds n x chunks cells per step (8 x 8 x 15 for a ring).
                cells.append(
                    f'<td data-tone="{tone}"{paint}{marks}>'
                    f"<div>{chr(10).join(shown[rep][c])}</div>"
                    f'<div class="mws-sum">{holders_text(h, self.n)}</div>{notes}</td>'
                )
            left = ' data-left-out="yes"' if lost else ""
            rows.append(
                f'<tr data-replica="{rep}"{left}><th>replica {rep}'
                f'<div class="mws-sub">{esc(self.devices[rep])}</div>{mark}</th>'
                f"{''.join(cells)}</tr>"
            )
        caption = (
            f"each cell: the first {count} numbers of that chunk on that replica, "
            "and whose values they sum so far"
        )
        return (
            f'<table class="mws-grid"><thead><tr><th>replica</th>{head}</tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table>"
            f'<div class="mws-sub">{caption}</div>'
        )

    def _moves_html(self, moved) -> str:
        items = []
        for t in moved.transfers:
            lo, hi = self.bounds[t.chunk]
            what = f"chunk {t.chunk}" if self.chunks > 1 else "its whole tensor"
            done = "added" if t.combine == "add" else "copied over its own"
            items.append(
                f"<li>replica {t.source} → {t.target}: {what}, {hi - lo:,} values, "
                f"{format_size((hi - lo) * self.itemsize)}, {done}</li>"
            )
        return f'<ul class="mws-moves">{"".join(items)}</ul>'

    def _bytes_html(self, step: int) -> str:
        n, size = self.n, format_size(self.replay.nbytes)
        ring = format_size(round(self.ring_total))
        algorithm = self.replay.schedule.algorithm
        if algorithm in RING:
            against = (
                f"the ring's 2(n-1)/n &#215; size = {2 * (n - 1) / n:.3g} &#215; {size} = {ring}"
            )
            extra = self.total - round(self.ring_total)
            if extra > 0:
                against += f" (chunks of unequal length: the longest ones add {format_size(extra)})"
        else:
            against = (
                f"{algorithm}'s steps' busiest links (different links) add up to "
                f"{format_size(self.total)}; each of a ring's links carries 2(n-1)/n &#215; "
                f"size = {2 * (n - 1) / n:.3g} &#215; {size} = {ring}"
            )
        this = format_size(self.step_bytes[step - 1]) if step else "nothing yet"
        scale = max(self.total, self.ring_total) or 1
        fill = 100 * self.so_far[step] / scale
        whole = 100 * self.total / scale
        tick = 100 * self.ring_total / scale
        meter = (
            f'<div class="mws-meter" style="background:{style.SURFACE}">'
            f'<i style="width:{whole:.1f}%;background:{style.BORDER}"></i>'
            f'<i style="width:{fill:.1f}%;background:{style.BLUE}"></i>'
            f'<b style="left:{tick:.1f}%;background:{style.GOOD}"></b></div>'
        )
        return (
            f'<div class="mws-bytes" data-step-bytes="{self.step_bytes[step - 1] if step else 0}"'
            f' data-so-far="{self.so_far[step]}">busiest link this step: <strong>{this}</strong>;'
            f" each step's busiest link, added up so far: "
            f"<strong>{format_size(self.so_far[step])}</strong> of "
            f"{format_size(self.total)}{meter}"
            f'<div class="mws-sub">against {against}</div></div>'
        )

    # ------------------------------------------------------------------ whole outputs

    def stylesheet(self, uid: str, frames: bool) -> str:
        """The stepper's rules, every one under ``#uid``; with ``frames``, the switching too."""
        s = f"#{uid}"
        rules = [
            f"{s}{{position:relative;line-height:1.35}}",
            f"{s} .mws-title{{margin:2px 0}}",
            f"{s} .mws-legend{{margin:2px 0 6px}}",
            f"{s} .mws-key{{display:inline-block;border:1px solid {style.BORDER};"
            "border-radius:4px;padding:0 5px;margin:0 4px 2px 0}",
            f"{s} .mws-sub{{color:{style.MUTED};font-weight:normal}}",
            f"{s} .mws-what{{margin:4px 0}}",
            f"{s} .mws-grid{{border-collapse:separate;border-spacing:3px}}",
            f"{s} .mws-grid th{{text-align:left;vertical-align:top;padding:2px 6px;"
            "white-space:nowrap}",
            f"{s} .mws-grid td{{border:1px solid {style.BORDER};border-radius:5px;"
            "padding:3px 6px;vertical-align:top;white-space:nowrap;min-width:7em}",
            f"{s} .mws-grid td>div:first-child{{white-space:pre}}",
            *(
                f"{s} .mws-grid td[data-tone={tone}]{{border-color:{border}}}"
                for tone, (_, border, _) in TONES.items()
                if border != style.BORDER
            ),
            f"{s} .mws-sum{{color:{style.MUTED}}}",
            f"{s} .mws-in{{color:{RECEIVED}}}",
            f"{s} .mws-out{{color:{SENT}}}",
            f"{s} .mws-to{{outline:2px solid {RECEIVED};outline-offset:-2px}}",
            f"{s} .mws-from{{outline:2px dashed {SENT};outline-offset:-2px}}",
            f"{s} .mws-to.mws-from{{outline-style:double}}",
            f"{s} .mws-moves{{margin:4px 0;padding-left:1.5em}}",
            f"{s} .mws-meter{{position:relative;width:260px;height:8px;margin:3px 0;"
            f"border:1px solid {style.BORDER}}}",
            f"{s} .mws-meter i{{position:absolute;left:0;top:0;bottom:0}}",
            f"{s} .mws-meter b{{position:absolute;top:-3px;bottom:-3px;width:2px}}",
            f"{s} .mws-verdict p{{margin:4px 0}}",
            f"{s} .mws-nav{{margin:4px 0;user-select:none}}",
            f"{s} .mws-nav label,{s} .mws-nav span{{display:inline-block;padding:1px 6px;"
            f"margin:0 2px 2px 0;border:1px solid {style.BORDER};border-radius:4px}}",
            f"{s} .mws-nav label{{cursor:pointer;background:{style.SURFACE}}}",
            f"{s} .mws-nav label:hover{{border-color:{style.BLUE}}}",
            f"{s} .mws-nav .mws-goto{{border:0;padding:0}}",
            f"{s} .mws-nav .mws-at{{background:{style.BLUE};color:{style.WHITE};"
            f"border-color:{style.BLUE}}}",
            f"{s} .mws-nav .mws-off{{color:{style.AXIS}}}",
            f"{s} .mws-nav .mws-keys{{border:0;color:{style.MUTED}}}",
        ]
        if frames:
            # The radios stay in the page, unseen but focusable: Tab reaches the group and
            # the arrow keys step; the focused step's navigation bar shows the focus ring.
            rules.append(
                f"{s}>.mws-radio{{position:absolute;opacity:0;width:1px;height:1px;margin:0}}"
            )
            rules.append(f"{s} .mws-frame{{display:none}}")
            shown = ",".join(
                f'{s}-{k}:checked~.mws-frames>.mws-frame[data-step="{k}"]'
                for k in range(self.last + 1)
            )
            rules.append(f"{shown}{{display:block}}")
            focused = ",".join(
                f'{s}-{k}:focus-visible~.mws-frames>.mws-frame[data-step="{k}"] .mws-nav'
                for k in range(self.last + 1)
            )
            rules.append(f"{focused}{{outline:2px solid {style.BLUE};outline-offset:2px}}")
        return f"<style>{''.join(rules)}</style>"

    def view(self, step: int, count: int, uid: str) -> str:
        """One frame, as the live widget shows it (no radio inputs, no labels)."""
        return (
            f'<div class="mw-stepper" id="{uid}" style="{FONT}">'
            f"{self.stylesheet(uid, frames=False)}{self.frame_html(step, count)}</div>"
        )

    def header_view(self, uid: str, title: str = "") -> str:
        """The heading and the legend, as the live widget shows them above its controls."""
        return (
            f'<div class="mw-stepper" id="{uid}" style="{FONT}">'
            f"{self.stylesheet(uid, frames=False)}{self.header_html(title)}</div>"
        )

    def snapshot(self, step: int, count: int, title: str = "") -> str:
        """Every frame, ``step`` shown first; CSS switches between them. A new id per call."""
        uid = new_id()
        radios = "".join(
            f'<input type="radio" class="mws-radio" name="{uid}" id="{uid}-{k}"'
            f' aria-label="{esc(self.summary(k))}"{" checked" if k == step else ""}>'
            for k in range(self.last + 1)
        )
        frames = "".join(self.frame_html(k, count, nav=uid) for k in range(self.last + 1))
        return (
            f'<div class="mw-stepper mw-snapshot" id="{uid}" style="{FONT}">'
            f"{self.stylesheet(uid, frames=True)}{radios}{self.header_html(title)}"
            f'<div class="mws-frames">{frames}</div></div>'
        )
