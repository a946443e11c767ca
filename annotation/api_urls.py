from django.urls import path

from annotation import api

urlpatterns = [
    path("annotation/assignments/", api.MyAssignmentsView.as_view(), name="api-my-assignments"),
    path("annotation/assignments/<int:pk>/", api.AssignmentItemView.as_view(), name="api-assignment"),
    path("annotation/assignments/<int:pk>/answer/", api.AnswerView.as_view(), name="api-answer"),
]
