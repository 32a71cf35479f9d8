"""Planners, where the reference's code imports them from (`...planners`): an
`LlmAgent(planner=...)` adds to each model request and reworks each model response."""

from baton.planners.base_planner import BasePlanner
from baton.planners.built_in_planner import BuiltInPlanner
from baton.planners.plan_re_act_planner import PlanReActPlanner

__all__ = ["BasePlanner", "BuiltInPlanner", "PlanReActPlanner"]
